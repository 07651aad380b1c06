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

/// A library message in the command line's words: the call argument `splitk=1`, `splitk=(S, 'contiguous')` or
/// `splitk='auto'` becomes the flag `--splitk 1`, `--splitk S,contiguous`, `--splitk auto`, so that its way out is
/// what a user of the command types.
pub fn in_flag_words(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("splitk=") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "splitk=".len()..];
        let (value, tail) = match after.strip_prefix('(') {
            Some(inner) => match inner.find(')') {
                Some(j) => (inner[..j].replace(['\'', ' '], ""), &inner[j + 1..]),
                None => (String::new(), after),
            },
            None => {
                let j = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '\'')).unwrap_or(after.len());
                (after[..j].replace('\'', ""), &after[j..])
            }
        };
        if value.is_empty() {
            out.push_str("splitk=");
            rest = after;
            continue;
        }
        out.push_str("--splitk ");
        out.push_str(&value);
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::in_flag_words;

    #[test]
    fn call_arguments_become_flags() {
        let m = "splitk='auto' cannot be resolved. Ways out: (1) pass splitk=1 if unsplit; (2) pass splitk=(S, \
                 'serial'|'pairwise') if known";
        assert_eq!(
            in_flag_words(m),
            "--splitk auto cannot be resolved. Ways out: (1) pass --splitk 1 if unsplit; (2) pass --splitk \
             S,serial|pairwise if known"
        );
        assert_eq!(
            in_flag_words("splitk=2 needs a reduction scheme: pass splitk=(2, 'contiguous')"),
            "--splitk 2 needs a reduction scheme: pass --splitk 2,contiguous"
        );
        assert_eq!(in_flag_words("no split here"), "no split here");
    }
}
