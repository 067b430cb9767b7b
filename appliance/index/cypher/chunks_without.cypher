// Negation: passages that name one of `keys` in documents that name none of `absent`
// ("policies about X that do not mention Y"). A document's NAMES edges hold each entity
// it names once, so the check is one hop from the document; all passages of a document
// share its access fields, so an asker who may read the passage may read whatever of
// its document names the absent entity.
// parameters: keys (names), absent (names), limit (count)
MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk)-[:MENTIONS]->(e:Entity)
WHERE e.key IN $keys AND {access}
  AND NOT EXISTS { MATCH (d)-[:NAMES]->(gone:Entity) WHERE gone.key IN $absent }
WITH c, count(DISTINCT e) AS matched, collect(DISTINCT e.key) AS named
RETURN c.chunk_id AS chunk_id, toFloat(matched) AS score, named AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
