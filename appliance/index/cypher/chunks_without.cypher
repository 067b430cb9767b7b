// Negation: passages that name one of `keys` in documents where no passage the asker
// may read names any of `absent` ("policies about X that do not mention Y"). The
// documents that do are found first, once, from the absent entities' own mentions.
// parameters: keys (names), absent (names), limit (count)
OPTIONAL MATCH (gone:Entity)<-[:MENTIONS]-(other:Chunk)
WHERE gone.key IN $absent AND {access:other}
WITH collect(DISTINCT other.doc_id) AS naming_absent
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity)
WHERE e.key IN $keys AND {access} AND NOT c.doc_id IN naming_absent
WITH c, count(DISTINCT e) AS matched, collect(DISTINCT e.key) AS named
RETURN c.chunk_id AS chunk_id, toFloat(matched) AS score, named AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
