// Node counts per label and relationship counts per type, from the count store.
RETURN
    {NAME: COUNT { (:NAME) }, IMPL: COUNT { (:IMPL) }, BLOCK: COUNT { (:BLOCK) }} AS nodes,
    {
        HAS_IMPL: COUNT { ()-[:HAS_IMPL]->() },
        HAS_BLOCK: COUNT { ()-[:HAS_BLOCK]->() },
        PARENT: COUNT { ()-[:PARENT]->() }
    } AS relationships
