// The passages that name the question's entities, those naming more of them first.
// parameters: keys (names), limit (count)
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity)
WHERE e.key IN $keys AND {access}
WITH c, count(DISTINCT e) AS matched, collect(DISTINCT e.key) AS named
RETURN c.chunk_id AS chunk_id, toFloat(matched) AS score, named AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
