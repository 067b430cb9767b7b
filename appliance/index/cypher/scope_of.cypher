// The scope of passages: what each applies to and what it excludes, with the span
// that says so (the answer path's applicability check).
// parameters: chunk_ids (ids)
MATCH (c:Chunk)-[s:APPLIES_TO|EXCLUDES]->(e:Entity)
WHERE c.chunk_id IN $chunk_ids AND {access}
RETURN c.chunk_id AS chunk_id, type(s) AS kind, e.key AS target, e.kind AS target_kind,
       s.start AS start, s.end AS end
ORDER BY chunk_id, start
