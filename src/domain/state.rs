//! Lifecycles as types: a session's, a belief's and an extraction run's states, stored and
//! answered as today's strings, with the belief transitions in one place.

/// Declares a state enum with its stored string for each state.
macro_rules! states {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            /// Every state, in lifecycle order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The string stored in Neo4j and shown on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The state a stored or sent string names.
            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|s| s.as_str() == text)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

states! {
    /// A session: open while the agent works, then closed by it or abandoned when idle.
    SessionStatus { Open = "open", Closed = "closed", Abandoned = "abandoned" }
}

states! {
    /// A belief: proposed by extraction, active once held (approved or asserted), or rejected.
    BeliefStatus { Proposed = "proposed", Active = "active", Rejected = "rejected" }
}

states! {
    /// An extraction run.
    RunStatus {
        Running = "running",
        Completed = "completed",
        CompletedWithErrors = "completed_with_errors",
        Failed = "failed",
    }
}

impl SessionStatus {
    /// How a client may end a session.
    pub const ENDINGS: &'static [SessionStatus] =
        &[SessionStatus::Closed, SessionStatus::Abandoned];
}

impl BeliefStatus {
    /// The states a new belief may start in.
    pub const INITIAL: &'static [BeliefStatus] = &[BeliefStatus::Active, BeliefStatus::Proposed];

    /// The states from which a review may move a belief to `self`: approval makes a proposed
    /// belief active; rejection applies to proposed and active ones. Reaching a state it is
    /// already in changes nothing.
    pub const fn reachable_from(self) -> &'static [BeliefStatus] {
        match self {
            BeliefStatus::Active => &[BeliefStatus::Proposed],
            BeliefStatus::Rejected => &[BeliefStatus::Proposed, BeliefStatus::Active],
            BeliefStatus::Proposed => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_strings() {
        for s in BeliefStatus::ALL {
            assert_eq!(BeliefStatus::parse(s.as_str()), Some(*s));
        }
        for s in SessionStatus::ALL {
            assert_eq!(SessionStatus::parse(s.as_str()), Some(*s));
        }
        assert_eq!(
            RunStatus::parse("completed_with_errors"),
            Some(RunStatus::CompletedWithErrors)
        );
        assert_eq!(BeliefStatus::parse("Active"), None);
    }

    #[test]
    fn a_rejected_belief_is_never_approved() {
        assert!(!BeliefStatus::Active
            .reachable_from()
            .contains(&BeliefStatus::Rejected));
        assert!(BeliefStatus::Rejected
            .reachable_from()
            .contains(&BeliefStatus::Active));
    }
}
