//! `[sandbox]` of `config.toml` (agent-config's [`SandboxSettings`]) to a running sandbox: the
//! one place that chooses the backend.

use std::path::Path;
use std::sync::Arc;

use agent_config::{SandboxBackend, SandboxSettings};

use crate::Sandbox;
#[cfg(feature = "docker")]
use crate::docker::{DockerSandbox, DockerSandboxOptions};
use crate::error::SandboxError;
use crate::local::{LocalSandbox, LocalSandboxOptions};

/// What a caller of [`from_settings`] needs of the sandbox besides `[sandbox]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SandboxFeatures {
    /// The workspace appears at its own host path inside the sandbox.
    pub mirrored: bool,
    /// A virtual display (an X server in the sandbox, `DISPLAY` set for its programs).
    pub display: bool,
}

impl SandboxFeatures {
    /// The workspace at its own host path, no display (the tools of `use_sandbox = true`).
    pub const MIRRORED: Self = Self {
        mirrored: true,
        display: false,
    };
    /// The workspace at `work_dir` and a display (SandboxManus).
    pub const DESKTOP: Self = Self {
        mirrored: false,
        display: true,
    };
}

/// The sandbox `[sandbox]` describes — bubblewrap on this machine (`backend = "local"`, the
/// default) or a Docker container from `image` (`backend = "docker"`) — over `workspace`, which
/// is created when missing and canonicalised (the sandbox needs a path without symbolic links).
///
/// `features.mirrored` shows the workspace at its own host path inside the sandbox, so that
/// tools see the same absolute paths with and without it; otherwise it is at `[sandbox]
/// work_dir`. `features.display` gives the sandbox a virtual display (`computer_use`): `[sandbox] xvfb` run
/// inside the sandbox — from the host's read-only filesystem under bubblewrap, from the image
/// in a Docker container — and [`crate::SandboxError::DisplayUnavailable`] when it cannot start
/// (the caller may then build the sandbox again without one).
/// `use_sandbox` is not looked at: the caller decides whether a sandbox is wanted.
///
/// # Errors
///
/// [`SandboxError::Io`] when the workspace cannot be created or resolved,
/// [`SandboxError::InvalidSetting`] for an unusable `memory_limit`, `cpu_limit`, `timeout` or
/// `work_dir`, and [`SandboxError::Unavailable`] when the backend cannot run here (the message
/// says how to fix it). Nothing falls back to running unsandboxed.
pub async fn from_settings(
    settings: &SandboxSettings,
    workspace: &Path,
    features: SandboxFeatures,
) -> Result<Arc<dyn Sandbox>, SandboxError> {
    tokio::fs::create_dir_all(workspace).await.map_err(|e| {
        SandboxError::io(
            format!("cannot create the workspace {}", workspace.display()),
            e,
        )
    })?;
    let workspace = tokio::fs::canonicalize(workspace).await.map_err(|e| {
        SandboxError::io(
            format!("cannot resolve the workspace {}", workspace.display()),
            e,
        )
    })?;
    let local = LocalSandboxOptions::from_settings(
        &workspace,
        &settings.work_dir,
        &settings.memory_limit,
        settings.cpu_limit,
        settings.timeout,
        settings.network_enabled,
    )?;
    let local = if features.mirrored {
        local.mirrored()
    } else {
        local
    };
    let local = if features.display {
        LocalSandboxOptions {
            x_server: settings.xvfb.clone(),
            ..local.with_display()
        }
    } else {
        local
    };
    tracing::debug!(
        backend = ?settings.backend,
        workspace = %workspace.display(),
        work_dir = %local.work_dir.display(),
        "starting the sandbox of [sandbox]"
    );
    match settings.backend {
        SandboxBackend::Local => Ok(Arc::new(LocalSandbox::new(local).await?)),
        #[cfg(not(feature = "docker"))]
        SandboxBackend::Docker => Err(SandboxError::Unavailable(DOCKER_FEATURE_OFF.to_owned())),
        #[cfg(feature = "docker")]
        SandboxBackend::Docker => {
            let docker = DockerSandboxOptions {
                image: settings.image.clone(),
                work_dir: local.work_dir,
                memory_limit: local.memory_limit,
                cpu_limit: local.cpu_limit,
                timeout: local.timeout,
                network_enabled: settings.network_enabled,
                display: local.display,
                x_server: local.x_server,
                ..DockerSandboxOptions::new(&workspace)
            };
            Ok(Arc::new(DockerSandbox::new(docker).await?))
        }
    }
}

/// Why `backend = "docker"` is refused by a build without the `docker` feature.
#[cfg(not(feature = "docker"))]
pub(crate) const DOCKER_FEATURE_OFF: &str = "[sandbox] backend = \"docker\" needs the `docker` \
     cargo feature, and this build was made without it (rebuild with the default features, or \
     `--features docker`); backend = \"local\" (bubblewrap) is available";
