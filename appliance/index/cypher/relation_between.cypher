// What a passage states between two of the question's entities (a drug and the
// condition it treats, a dose of a drug, what a procedure requires, ...).
// parameters: keys (names), limit (count)
MATCH (a:Entity)-[r:TREATS|NOT_INDICATED_FOR|DOSE_OF|CONTRAINDICATED_WITH|REQUIRES|NEXT_STEP]->(b:Entity)
WHERE a.key IN $keys AND b.key IN $keys
MATCH (c:Chunk {chunk_id: r.chunk_id})
WHERE {access}
WITH c, collect(DISTINCT a.key + ' ' + type(r) + ' ' + b.key) AS stated
RETURN c.chunk_id AS chunk_id, toFloat(size(stated)) AS score, stated AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
