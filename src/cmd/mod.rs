//! The subcommands of `mmaemu`, each a short adapter: its arguments, one library call, its printing.
//! Every command returns how it ended ([`Exit`]) or why it could not do its work ([`CommandError`]);
//! `main` prints the error and turns both into the exit status (the table is in the README).

pub mod attribute;
pub mod attribute_html;
pub mod bench;
pub mod call;
pub mod datasets;
pub mod explain;
pub mod fit;
pub mod info;
pub mod platform;
pub mod replay;
pub mod report;
pub mod selftest;
pub mod trace;
pub mod vars;

use std::fmt;

/// How a command ended; each has one exit status, the same in every command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: done, nothing failed.
    Success,
    /// 1: done, and something failed: a row, a call that torch would reject, a check, a regression.
    Failed,
    /// 2: a usage error or input that cannot be read.
    BadInput,
    /// 4: the device (GPU) asked for cannot be used.
    NoDevice,
}

impl Exit {
    /// The exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::BadInput => 2,
            Exit::NoDevice => 4,
        }
    }

    /// [`Exit::Failed`] if `failed`, else [`Exit::Success`].
    pub fn failed_if(failed: bool) -> Exit {
        if failed {
            Exit::Failed
        } else {
            Exit::Success
        }
    }
}

/// Why a command could not do its work: the exit status and a message for humans.
#[derive(Debug)]
pub struct CommandError {
    /// The exit status ([`Exit::BadInput`] or [`Exit::NoDevice`]).
    pub exit: Exit,
    /// What went wrong, in plain words.
    pub message: String,
    /// Print the message as it is, without the `mmaemu <command>: ` prefix (a wording the reference fixes).
    pub verbatim: bool,
}

impl CommandError {
    /// A usage error or unreadable input (exit 2).
    pub fn bad_input(message: impl fmt::Display) -> CommandError {
        CommandError { exit: Exit::BadInput, message: message.to_string(), verbatim: false }
    }

    /// A device that cannot be used (exit 4), printed verbatim.
    pub fn no_device(message: impl fmt::Display) -> CommandError {
        CommandError { exit: Exit::NoDevice, message: message.to_string(), verbatim: true }
    }
}

/// What every command returns.
pub type CommandResult = Result<Exit, CommandError>;
