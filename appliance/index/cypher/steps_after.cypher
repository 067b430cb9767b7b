// A procedure's order, forwards: the passages whose numbered steps say what is done
// after a step that names one of the question's entities ("what is given after
// oxytocin?"), with the step that follows as the evidence.
// parameters: keys (names), limit (count)
MATCH (a:Entity)-[r:NEXT_STEP]->(b:Entity)
WHERE a.key IN $keys
MATCH (c:Chunk {chunk_id: r.chunk_id})
WHERE {access}
WITH c, collect(DISTINCT a.key + ' ' + type(r) + ' ' + b.key) AS stated
RETURN c.chunk_id AS chunk_id, toFloat(size(stated)) AS score, stated AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
