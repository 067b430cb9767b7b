// Negation: passages that name one of `keys` in documents where no passage the asker
// may read names any of `absent` ("policies about X that do not mention Y").
// parameters: keys (names), absent (names), limit (count)
MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk)-[:MENTIONS]->(e:Entity)
WHERE e.key IN $keys AND {access}
  AND NOT EXISTS {
    MATCH (d)-[:HAS_CHUNK]->(other:Chunk)-[:MENTIONS]->(gone:Entity)
    WHERE gone.key IN $absent AND {access:other}
  }
WITH c, count(DISTINCT e) AS matched, collect(DISTINCT e.key) AS named
RETURN c.chunk_id AS chunk_id, toFloat(matched) AS score, named AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
