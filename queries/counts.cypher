// Node counts per label and relationship counts per type, from the count store.
RETURN
    {
        NAME: COUNT { (:NAME) }, IMPL: COUNT { (:IMPL) }, BLOCK: COUNT { (:BLOCK) },
        ROW: COUNT { (:ROW) }, CHUNK: COUNT { (:CHUNK) },
        PATH: COUNT { (:PATH) }, PATHVALUE: COUNT { (:PATHVALUE) },
        FILE: COUNT { (:FILE) }, CLASS: COUNT { (:CLASS) }, MODULE: COUNT { (:MODULE) }
    } AS nodes,
    {
        HAS_IMPL: COUNT { ()-[:HAS_IMPL]->() },
        HAS_BLOCK: COUNT { ()-[:HAS_BLOCK]->() },
        PARENT: COUNT { ()-[:PARENT]->() },
        NEXT: COUNT { ()-[:NEXT]->() },
        JSON_CHILD: COUNT { ()-[:JSON_CHILD]->() },
        CONTAINS: COUNT { ()-[:CONTAINS]->() },
        CALLS: COUNT { ()-[:CALLS]->() },
        IMPORTS: COUNT { ()-[:IMPORTS]->() },
        INHERITS: COUNT { ()-[:INHERITS]->() }
    } AS relationships
