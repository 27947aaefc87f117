//! What a confined tool's output says the confinement refused: the tell-tale errors of a
//! read-only file system, a missing network and a denied access (as codex does, by the words
//! the kernel's errors print; a refusal that prints nothing is not seen).

/// What a refused call needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Writing outside the writable directories.
    Write,
    /// The network.
    Network,
    /// Some access the confinement does not give (a hidden path, a write under Landlock).
    Access,
}

impl Need {
    /// In words, for the question, the event and the note.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Write => "write outside the workspace",
            Self::Network => "the network",
            Self::Access => "access beyond the sandbox",
        }
    }
}

/// Words of the errors a write on the read-only file system prints.
const WRITE: &[&str] = &["Read-only file system", "[Errno 30]"];

/// Words of the errors a missing network prints (no route, no DNS, no socket).
const NETWORK: &[&str] = &[
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Could not resolve host",
    "nodename nor servname",
    "[Errno 101]",
    "[Errno -3]",
    "[Errno -2]",
    "socket: Permission denied",
];

/// Words of a connection refused: with the network off, the tools' `127.0.0.1` is a loopback
/// of their own, where nothing listens.
const REFUSED: &[&str] = &["Connection refused", "[Errno 111]"];

/// Words of a denied access.
const ACCESS: &[&str] = &["Permission denied", "Operation not permitted", "[Errno 13]"];

/// What `output` shows the confinement refused, if anything; `network_off` when the tools have
/// no network (a refused connection then counts).
#[must_use]
pub fn refusal(output: &str, network_off: bool) -> Option<Need> {
    let any = |words: &[&str]| words.iter().any(|word| output.contains(word));
    if any(WRITE) {
        Some(Need::Write)
    } else if network_off && (any(NETWORK) || any(REFUSED)) {
        Some(Need::Network)
    } else if any(ACCESS) {
        Some(Need::Access)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_s_words_tell_what_was_refused() {
        assert_eq!(
            refusal("OSError: [Errno 30] Read-only file system: '/x'", true),
            Some(Need::Write)
        );
        assert_eq!(
            refusal("<urlopen error [Errno 111] Connection refused>", true),
            Some(Need::Network)
        );
        assert_eq!(
            refusal("curl: (6) Could not resolve host: x.org", true),
            Some(Need::Network)
        );
        assert_eq!(
            refusal("Connection refused", false),
            None,
            "with the network on, a refused connection is the server's"
        );
        assert_eq!(
            refusal("cat: /root/x: Permission denied", true),
            Some(Need::Access)
        );
        assert_eq!(refusal("all good\n", true), None);
    }
}
