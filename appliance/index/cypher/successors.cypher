// Supersession: the passages of the documents that replaced a document naming the
// question's entities, nearest first, each with the day it took effect. The old version
// need only be readable: it is, by being replaced, no longer in force.
// parameters: keys (names), limit (count)
MATCH (old:Document)-[:HAS_CHUNK]->(oc:Chunk)-[:MENTIONS]->(e:Entity)
WHERE e.key IN $keys AND {readable:oc}
MATCH path = (new:Document)-[:SUPERSEDES*1..5]->(old)
MATCH (new)-[:HAS_CHUNK]->(c:Chunk)
WHERE {access}
WITH c, new, old, min(length(path)) AS hops
RETURN c.chunk_id AS chunk_id, 1.0 / (hops + c.ordinal) AS score,
       [new.doc_id + ' supersedes ' + old.doc_id + ' from day ' + toString(new.effective_from)] AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
