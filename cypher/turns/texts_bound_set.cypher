// A pass made every search text cut at a shorter bound than $bound whole again, stored every
// text's identifiers' parts in form $parts and made every text in form $form.
MERGE (m:SchemaMeta {id: 'cairn'})
SET m.texts_bound = $bound, m.texts_parts = $parts, m.texts_form = $form
