//! The system doctor's install commands are for, from `/etc/os-release`.

/// The system the install commands are for (`/etc/os-release`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Os {
    /// `PRETTY_NAME`, when there is one.
    pub(super) name: Option<String>,
    pub(super) family: Family,
    /// Commands run as root need no `sudo`.
    pub(super) root: bool,
}

/// Which package manager and package names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    /// Debian and its derivatives: apt-get.
    Debian,
    /// Ubuntu: apt-get, Chromium as `chromium-browser`.
    Ubuntu,
    /// Fedora, RHEL and their derivatives: dnf.
    Fedora,
    /// Anything else: the words, not a command.
    Other,
}

impl Family {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Debian => "debian",
            Self::Ubuntu => "ubuntu",
            Self::Fedora => "fedora",
            Self::Other => "other",
        }
    }
}

/// What can be installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
// A build without `docker` or `charts` installs neither Docker nor pandas.
#[cfg_attr(not(all(feature = "charts", feature = "docker")), allow(dead_code))]
pub(super) enum Package {
    Chromium,
    Bubblewrap,
    UtilLinux,
    Xvfb,
    Docker,
    Python3,
    Pandas,
    NatsServer,
}

impl Os {
    /// This machine's.
    pub(super) fn detect() -> Self {
        let text = std::fs::read_to_string("/etc/os-release")
            .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
            .unwrap_or_default();
        Self::parse(&text, running_as_root())
    }

    /// From the text of an `os-release` file.
    fn parse(text: &str, root: bool) -> Self {
        let field = |key: &str| {
            text.lines().find_map(|line| {
                let value = line.trim().strip_prefix(key)?.strip_prefix('=')?;
                Some(value.trim().trim_matches('"').trim_matches('\'').to_owned())
            })
        };
        let id = field("ID").unwrap_or_default().to_lowercase();
        let like = field("ID_LIKE").unwrap_or_default().to_lowercase();
        let is = |name: &str| id == name || like.split_whitespace().any(|l| l == name);
        let family = if id == "ubuntu" {
            Family::Ubuntu
        } else if is("debian") || is("ubuntu") {
            Family::Debian
        } else if is("fedora") || is("rhel") {
            Family::Fedora
        } else {
            Family::Other
        };
        Self {
            name: field("PRETTY_NAME").filter(|name| !name.is_empty()),
            family,
            root,
        }
    }

    /// The command that installs `package` here (the words, on a system not known).
    pub(super) fn install(&self, package: Package) -> String {
        let (debian, fedora, other) = match package {
            Package::Chromium => (
                "chromium",
                "chromium",
                "install Chromium (`chromium`, `chromium-browser` or `google-chrome` on PATH), or name it in [browser] chrome_instance_path",
            ),
            Package::Bubblewrap => (
                "bubblewrap",
                "bubblewrap",
                "install bubblewrap (`bwrap` on PATH) from the system's packages",
            ),
            Package::UtilLinux => (
                "util-linux",
                "util-linux",
                "install util-linux (`prlimit` on PATH)",
            ),
            Package::Xvfb => (
                "xvfb",
                "xorg-x11-server-Xvfb",
                "install Xvfb (the X virtual framebuffer) from the system's packages",
            ),
            Package::Docker => (
                "docker.io",
                "moby-engine",
                "install Docker Engine (https://docs.docker.com/engine/install/)",
            ),
            Package::Python3 => ("python3", "python3", "install Python 3 (`python3` on PATH)"),
            Package::Pandas => (
                "python3-pandas",
                "python3-pandas",
                "python3 -m pip install pandas",
            ),
            Package::NatsServer => (
                "nats-server",
                "nats-server",
                "install nats-server (https://github.com/nats-io/nats-server/releases)",
            ),
        };
        let sudo = if self.root { "" } else { "sudo " };
        match self.family {
            Family::Ubuntu if package == Package::Chromium => {
                format!("{sudo}apt-get install -y chromium-browser")
            }
            Family::Debian | Family::Ubuntu => format!("{sudo}apt-get install -y {debian}"),
            Family::Fedora => format!("{sudo}dnf install -y {fedora}"),
            Family::Other => other.to_owned(),
        }
    }
}

/// Whether this process runs as root (effective user id 0).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let ids = line.strip_prefix("Uid:")?;
                ids.split_whitespace().nth(1).map(|euid| euid == "0")
            })
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_comes_from_id_and_id_like() {
        let debian = Os::parse(
            "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n",
            false,
        );
        assert_eq!(debian.family, Family::Debian);
        assert_eq!(
            debian.name.as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            Os::parse("ID=ubuntu\nID_LIKE=debian\n", false).family,
            Family::Ubuntu
        );
        assert_eq!(
            Os::parse("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n", false).family,
            Family::Debian
        );
        assert_eq!(Os::parse("ID=fedora\n", false).family, Family::Fedora);
        assert_eq!(
            Os::parse("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n", false).family,
            Family::Fedora
        );
        assert_eq!(Os::parse("ID=arch\n", false).family, Family::Other);
        assert_eq!(Os::parse("", false).family, Family::Other);
        assert_eq!(Os::parse("", false).name, None);
    }

    #[test]
    fn install_commands_follow_the_system_and_the_user() {
        let debian = Os::parse("ID=debian\n", false);
        assert_eq!(
            debian.install(Package::Chromium),
            "sudo apt-get install -y chromium"
        );
        assert_eq!(
            debian.install(Package::Pandas),
            "sudo apt-get install -y python3-pandas"
        );
        assert_eq!(
            debian.install(Package::Docker),
            "sudo apt-get install -y docker.io"
        );
        let root = Os::parse("ID=debian\n", true);
        assert_eq!(root.install(Package::Xvfb), "apt-get install -y xvfb");
        let ubuntu = Os::parse("ID=ubuntu\n", false);
        assert_eq!(
            ubuntu.install(Package::Chromium),
            "sudo apt-get install -y chromium-browser"
        );
        assert_eq!(
            ubuntu.install(Package::NatsServer),
            "sudo apt-get install -y nats-server"
        );
        let fedora = Os::parse("ID=fedora\n", false);
        assert_eq!(
            fedora.install(Package::Xvfb),
            "sudo dnf install -y xorg-x11-server-Xvfb"
        );
        assert_eq!(
            fedora.install(Package::Bubblewrap),
            "sudo dnf install -y bubblewrap"
        );
        let other = Os::parse("ID=arch\n", false);
        assert_eq!(
            other.install(Package::Pandas),
            "python3 -m pip install pandas"
        );
        assert!(
            other
                .install(Package::Chromium)
                .starts_with("install Chromium")
        );
    }
}
