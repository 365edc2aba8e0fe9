"""Typed exceptions raised by the library; only the CLI turns them into messages."""


class PkgError(Exception):
    """Base class of every error PKG raises on purpose."""


class ConfigError(PkgError):
    """A setting, flag or specification is invalid."""


class CorpusError(PkgError):
    """The corpus given to a build is missing, unreadable or empty."""


class EmbedderError(PkgError):
    """An embedder cannot be loaded or fails to embed."""


class TuningError(PkgError):
    """`pkg tune` finds too few training pairs or cannot save its model."""


class StoreError(PkgError):
    """A graph store cannot be opened, read or written."""


class StoreNotFoundError(StoreError):
    """No database exists where one was expected."""


class MissingPartError(StoreError):
    """The database was built without the part (`pkg build --parts`) whose nodes a request searches."""


class StoreUnavailableError(StoreError):
    """A database server cannot be reached or refuses the credentials."""


class EmbedderMismatchError(StoreError):
    """The database was built with another embedder or dimension than the one in use."""


class GeneratorError(PkgError):
    """A generator (LLM) cannot be loaded or fails to answer."""


class ModelError(GeneratorError):
    """A model file cannot be found, assembled or verified."""


class BenchmarkError(PkgError):
    """Benchmark data is missing or malformed, or a benchmark request is invalid."""


class SandboxError(PkgError):
    """The sandbox for generated code cannot start or keep its workers running."""


class PromptTooLongError(GeneratorError):
    """A prompt and its answer's budget do not fit the model's context window."""
