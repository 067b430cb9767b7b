// Passages whose scope applies to, or excludes, one of the question's entities; an
// exclusion first (it is what keeps a protocol from being used where it must not be).
// parameters: keys (names), limit (count)
MATCH (c:Chunk)-[s:APPLIES_TO|EXCLUDES]->(e:Entity)
WHERE e.key IN $keys AND {access}
WITH c, collect(DISTINCT type(s) + ' ' + e.key) AS stated,
     max(CASE type(s) WHEN 'EXCLUDES' THEN 2.0 ELSE 1.0 END) AS weight
RETURN c.chunk_id AS chunk_id, weight AS score, stated AS evidence
ORDER BY score DESC, chunk_id
LIMIT $limit
