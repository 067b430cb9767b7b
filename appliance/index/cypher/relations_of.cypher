// What passages state between entities, with each statement's details and span: the
// answer path's check for sources that disagree (a drug dosed differently for one
// condition, or given where another source says it must not be).
// parameters: chunk_ids (ids)
MATCH (c:Chunk)-[:MENTIONS]->(a:Entity)
WHERE c.chunk_id IN $chunk_ids AND {access}
WITH DISTINCT c, a
MATCH (a)-[r:TREATS|NOT_INDICATED_FOR|DOSE_OF|CONTRAINDICATED_WITH|REQUIRES|NEXT_STEP]->(b:Entity)
WHERE r.chunk_id = c.chunk_id
RETURN c.chunk_id AS chunk_id, type(r) AS kind, a.key AS source, b.key AS target,
       r.start AS start, r.end AS end, r.amount AS amount, r.unit AS unit,
       r.route AS route, r.frequency AS frequency
ORDER BY chunk_id, start, kind, target
