// Drop every edge the linking pass computes (CALLS, INHERITS, IMPORTS between files), before it
// writes them anew.
CALL () {
    MATCH (:NAME)-[r:CALLS]->(:NAME) RETURN r
  UNION ALL
    MATCH (:CLASS)-[r:INHERITS]->(:CLASS) RETURN r
  UNION ALL
    MATCH (:FILE)-[r:IMPORTS]->(:FILE) RETURN r
}
DELETE r
