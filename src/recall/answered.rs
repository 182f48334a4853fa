//! Whether what follows an operation probably answers it: the result after a tool call or a
//! search, the reply after a message asking about the task. A task context brings such an
//! answer with its hit ([`crate::recall::relevant`]); turn search lifts it by the hit before
//! it ([`crate::recall::rank::with_neighbours`]). Pure: no I/O.

use crate::recall::bm25;

/// Whether the operation after one of `kind` saying `text` probably carries what a task asks
/// (`task`: the task's stemmed words, [`bm25::words`]): the result after a tool call or a
/// search; the reply after a message that asks about the task. A message asks about the task
/// when one of its questions holds one of the task's words: a turn found for what it states
/// and closing with an unrelated question ("… Any plans for the summer?") is followed by the
/// answer to that question, not to the task. A message that shares no word with the task
/// (found by its meaning), or a task without words, keeps the reply after any question. A
/// statement answers for itself.
pub fn answered_next(kind: &str, text: &str, task: &[String]) -> bool {
    match kind {
        "tool_call" | "search" => true,
        "message" => {
            let shares = |t: &str| bm25::words(t).iter().any(|w| task.contains(w));
            let mut questions = text
                .split_inclusive(['.', '!', '?', '\n'])
                .filter(|s| s.trim_end().ends_with('?'))
                .peekable();
            // The questions are stemmed first (they are short); the whole text only when none
            // of them holds a task word — a question's words are among the text's.
            if questions.peek().is_none() {
                false
            } else {
                task.is_empty() || questions.any(shares) || !shares(text)
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_answered_by_its_result_and_a_write_by_nothing() {
        assert!(answered_next("tool_call", "cargo test", &[]));
        assert!(answered_next("search", "token expiry", &[]));
        assert!(!answered_next("write", "why? src/a.rs", &[]));
    }

    #[test]
    fn a_reply_follows_a_question_about_the_task() {
        let task = bm25::words("Where has Melanie camped?");
        // Found for what it states; its question asks about something else.
        let aside = "We went camping in the forest. Any fun plans for the summer?";
        assert!(!answered_next("message", aside, &task));
        // Its question is the task's.
        let asked = "Wow, that's awesome! What's your best camping memory?";
        assert!(answered_next("message", asked, &task));
        // A statement answers for itself.
        assert!(!answered_next("message", "We camped at the beach.", &task));
        // Found by meaning, no word in common: its question is taken to be what matched.
        let meant = "How could we make the nightly backup restore faster?";
        assert!(answered_next(
            "message",
            meant,
            &bm25::words("speed up recovery")
        ));
        // A task without words to compare: any question.
        assert!(answered_next("message", aside, &[]));
    }
}
