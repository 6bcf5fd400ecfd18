//! The CLI's errors and the exit codes they map to.

use std::fmt;

/// Why a command failed.
#[derive(Debug, Clone, PartialEq)]
pub enum CliError {
    /// An argument is out of range (exit code 2, as for usage errors).
    Usage(String),
    /// The library reported an error (exit code 1).
    Demandtex(String),
    /// Writing an output failed (exit code 1).
    Io(String),
    /// What was asked for cannot run on this machine or build, e.g. the CUDA backend without
    /// a driver or device (exit code 2).
    Unavailable(String),
    /// The render stopped at its launch limit before converging (exit code 3).
    NotConverged {
        /// Launches used.
        launches: u32,
    },
    /// The converged render differs from the fully resident one (exit code 4).
    VerifyFailed {
        /// The largest absolute difference of any channel.
        max_abs_diff: f32,
    },
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Unavailable(_) => 2,
            CliError::Demandtex(_) | CliError::Io(_) => 1,
            CliError::NotConverged { .. } => 3,
            CliError::VerifyFailed { .. } => 4,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => write!(f, "invalid argument: {m}"),
            CliError::Demandtex(m) => write!(f, "{m}"),
            CliError::Io(m) | CliError::Unavailable(m) => write!(f, "{m}"),
            CliError::NotConverged { launches } => {
                write!(f, "the render did not converge within {launches} launches")
            }
            CliError::VerifyFailed { max_abs_diff } => write!(
                f,
                "verification failed: the converged render differs from the fully resident one by up to {max_abs_diff}"
            ),
        }
    }
}

impl std::error::Error for CliError {}

impl From<demandtex::Error> for CliError {
    fn from(e: demandtex::Error) -> Self {
        CliError::Demandtex(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_has_a_distinct_nonzero_exit_code() {
        let codes = [
            CliError::Usage("x".into()).exit_code(),
            CliError::Unavailable("x".into()).exit_code(),
            CliError::Demandtex("x".into()).exit_code(),
            CliError::NotConverged { launches: 1 }.exit_code(),
            CliError::VerifyFailed { max_abs_diff: 1.0 }.exit_code(),
        ];
        assert!(codes.iter().all(|&c| c != 0));
        assert_eq!(CliError::Io("x".into()).exit_code(), 1);
        assert!(CliError::VerifyFailed { max_abs_diff: 0.5 }
            .to_string()
            .contains("0.5"));
    }
}
