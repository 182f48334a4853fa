// Stores rebuilt search documents. The session stays dirty when it changed since it was read
// (its rev moved on); the embedding is redone only when the document text changed. The parts
// of its identifiers are stored beside it, in form $form (`domain::compounds`).
// Replicas rebuild the same dirty sessions side by side: a document built from an older
// revision than the one stored (`search_doc_rev`) is dropped, so a slow rebuild never puts
// back an older text (and a second embedding of the newer one after it). The first SET takes
// the session's write lock before that revision is read, so the comparison sees the last
// stored document.
UNWIND $rows AS row
MATCH (s:Session {id: row.id, project: row.project})
SET s.search_indexed_at = $now
WITH s, row
WHERE coalesce(s.search_doc_rev, -1) <= row.rev
SET s.search_dirty = coalesce(s.search_rev, 0) <> row.rev
SET s.embed_pending = CASE WHEN coalesce(s.search_doc_hash, '') = row.hash
                           THEN coalesce(s.embed_pending, false) ELSE true END
SET s.search_doc = row.doc, s.search_doc_parts = row.parts, s.search_doc_form = $form,
    s.search_doc_hash = row.hash, s.search_doc_rev = row.rev, s.search_files = row.files,
    s.search_importance = row.importance
