// Contraindications: the passages that say a drug of the question must not be given in a
// condition, or that a condition of the question rules a drug out ("in which patients
// must carboprost be avoided?", "which drugs are avoided in asthma?").
// parameters: keys (names), limit (count)
MATCH (a:Entity)-[r:CONTRAINDICATED_WITH]->(b:Entity)
WHERE a.key IN $keys OR b.key IN $keys
MATCH (c:Chunk {chunk_id: r.chunk_id})
WHERE {access}
WITH c, collect(DISTINCT a.key + ' ' + type(r) + ' ' + b.key) AS stated
RETURN c.chunk_id AS chunk_id, toFloat(size(stated)) AS score, stated AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
