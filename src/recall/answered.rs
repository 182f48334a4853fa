//! Whether what follows an operation probably answers it: the result after a tool call or a
//! search, the reply after a message asking about the task. A task context brings such an
//! answer with its hit ([`crate::recall::relevant`]); turn search lifts it by the hit before
//! it ([`crate::recall::rank::with_neighbours`]).
//!
//! A request to an agent is answered further on: the message right after it announces the
//! work ("Let me check the PR comments."), tool calls do it, and the agent's last message
//! before the user's next says what came of it. Prompt recall brings that conclusion with a
//! request it finds ([`conclusions`]: one read of the operations after the requests; the rest
//! of this module is pure).

use std::collections::HashMap;

use crate::graph::{operations, Store, StoreResult};
use crate::recall::bm25;

/// Operations read after a request to find its conclusion ([`conclusion`]): an exchange
/// longer than this is left as it is.
pub const EXCHANGE_WINDOW: i64 = 200;

/// What concluded a user's request, from the operations after it in its session (`after`:
/// each one's seq, type and role, in order; `whole`: whether they run to the session's end,
/// not only to the end of what was read). The exchange runs to the user's next message.
/// `None` when the agent did no work in it (any operation that is not a message): a
/// conversation's reply, which follows its question. `Some(Some(seq))`: its last message
/// after its last piece of work, what the work came to. `Some(None)`: work with nothing said
/// after it (a run cut short), or not seen to its end: the request comes alone, since the
/// message after it only announced the work.
pub fn conclusion<'a>(
    after: impl IntoIterator<Item = (i64, &'a str, &'a str)>,
    whole: bool,
) -> Option<Option<i64>> {
    let mut worked = false;
    let mut last = None;
    let mut ended = whole;
    for (seq, kind, role) in after {
        match (kind, role) {
            ("message", "user") => {
                ended = true;
                break;
            }
            ("message", "assistant") if worked => last = Some(seq),
            ("message", _) => {}
            _ => {
                worked = true;
                last = None;
            }
        }
    }
    worked.then(|| last.filter(|_| ended))
}

/// What concluded each of the user requests at `requests` (`(session, seq)`; [`conclusion`]),
/// by request: the conclusion's seq, or `None` for work that came to nothing said. Requests
/// the agent did no work for are left out.
pub async fn conclusions(
    store: &Store,
    project: &str,
    requests: &[(String, i64)],
) -> StoreResult<HashMap<(String, i64), Option<i64>>> {
    if requests.is_empty() {
        return Ok(HashMap::new());
    }
    let read = operations::following(store, project, requests, EXCHANGE_WINDOW).await?;
    Ok(read
        .into_iter()
        .filter_map(|f| {
            // Fewer places than the window holds (seqs have no gaps): the session ended
            // inside it.
            let whole = f.seqs.last().is_none_or(|s| *s < f.seq + EXCHANGE_WINDOW);
            let after = f
                .seqs
                .iter()
                .zip(&f.kinds)
                .zip(&f.roles)
                .map(|((seq, kind), role)| (*seq, kind.as_str(), role.as_str()));
            conclusion(after, whole).map(|end| ((f.session_id, f.seq), end))
        })
        .collect())
}

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
    fn a_request_the_agent_worked_on_is_answered_by_its_last_message() {
        let ops = |list: &[(i64, &'static str, &'static str)]| list.to_vec();
        // "I'll look.", two calls, a note between them, the outcome; then the next request.
        let worked = ops(&[
            (2, "message", "assistant"),
            (3, "tool_call", ""),
            (4, "message", "assistant"),
            (5, "write", ""),
            (6, "message", "assistant"),
            (7, "message", "user"),
            (8, "message", "assistant"),
        ]);
        assert_eq!(conclusion(worked.clone(), false), Some(Some(6)));
        // A conversation's reply: no work between, so the reply after a question stands.
        let talk = ops(&[(2, "message", "assistant"), (3, "message", "user")]);
        assert_eq!(conclusion(talk, true), None);
        // Work with nothing said after its last piece (a note between two calls is not what
        // it came to): the request comes alone.
        let cut_short = ops(&[
            (2, "message", "assistant"),
            (3, "tool_call", ""),
            (4, "message", "assistant"),
            (5, "tool_call", ""),
            (6, "message", "user"),
        ]);
        assert_eq!(conclusion(cut_short, true), Some(None));
        // Not seen to the user's next message: the end of the session is a conclusion, the
        // end of what was read is not.
        let open = ops(&[(2, "tool_call", ""), (3, "message", "assistant")]);
        assert_eq!(conclusion(open.clone(), true), Some(Some(3)));
        assert_eq!(conclusion(open, false), Some(None));
        assert_eq!(conclusion(Vec::new(), true), None);
    }

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
