// Recall benchmark: memories and active beliefs of the project.
UNWIND $memories AS m
CREATE (:Memory {id: m.id, project: $project, session_id: m.session_id, kind: 'lesson',
                 content: m.content, confidence: m.confidence, tokens: m.tokens, at: m.at})
WITH count(*) AS made
UNWIND $beliefs AS b
CREATE (:Belief {id: b.id, project: $project, content: b.content, category: 'bench',
                 prior: 0.7, conviction: 0.7, status: 'active', created_at: b.at,
                 updated_at: b.at})
