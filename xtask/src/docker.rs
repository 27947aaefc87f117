//! `cargo xtask docker`, and the Docker step of `ci`: the Docker backend's tests, run when an
//! engine answers, on test images imported from the host's own files (nothing downloaded).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::outcome::Outcome;
use crate::{cargo, machine, run, run_tests, say, tools_dir};

/// The image the Docker sandbox tests run: the host's static busybox and its bash (with the
/// libraries `ldd` names), imported with `docker import` (no registry is needed).
const DOCKER_TEST_IMAGE: &str = "openmanus-sandbox-test:busybox-bash";

/// The image the Docker backend's display tests run: the busybox image's files plus the host's
/// Xvfb, xkbcomp and keymaps, and python3 with tkinter, Tcl/Tk and a font (the test application
/// is Tk), all with their libraries; imported the same way, nothing downloaded.
const DOCKER_DESKTOP_IMAGE: &str = "openmanus-sandbox-test:desktop";

/// Runs the Docker backend's tests (ignored in the plain run) when a Docker engine answers;
/// otherwise says plainly that they were skipped. Returns their outcome when they ran.
pub(crate) fn docker_tests() -> Result<Option<Outcome>> {
    let Some(version) = machine::engine_version() else {
        say(
            "Docker sandbox tests: skipped (no Docker engine answers; `cargo xtask setup` starts one where it can)",
        );
        return Ok(None);
    };
    if !Path::new("/bin/busybox").is_file() {
        say(
            "Docker sandbox tests: skipped (no /bin/busybox to build the test image; apt-get install busybox-static)",
        );
        return Ok(None);
    }
    ensure_image(DOCKER_TEST_IMAGE, |_| Ok(()))?;
    let desktop = if let (true, Some(tkinter)) = (Path::new("/usr/bin/Xvfb").is_file(), tkinter()) {
        ensure_image(DOCKER_DESKTOP_IMAGE, |root| {
            add_desktop_files(root, &tkinter)
        })?;
        true
    } else {
        say(
            "Docker display tests: their image cannot be built here (no /usr/bin/Xvfb or no python3 tkinter; apt-get install xvfb python3-tk fonts-dejavu-core); they will fail",
        );
        false
    };
    say(&format!(
        "Docker sandbox tests: engine {version}, images {DOCKER_TEST_IMAGE}{}",
        if desktop {
            format!(" and {DOCKER_DESKTOP_IMAGE}")
        } else {
            String::new()
        }
    ));
    let mut test = cargo(&[
        "test",
        "--locked",
        "--all-features",
        "-p",
        "openmanus-agent-sandbox",
        "-p",
        "openmanus-agents",
        "-p",
        "openmanus-cli",
        "--test",
        "docker",
        "--no-fail-fast",
        "--",
        "--ignored",
    ]);
    test.env("OPENMANUS_DOCKER_IMAGE", DOCKER_TEST_IMAGE);
    test.env("OPENMANUS_DOCKER_DESKTOP_IMAGE", DOCKER_DESKTOP_IMAGE);
    run_tests("Docker sandbox tests", test).map(Some)
}

/// The file of the host `/usr/bin/python3`'s `_tkinter` module, when it has tkinter (the
/// display tests' application is Tk).
fn tkinter() -> Option<PathBuf> {
    let out = Command::new("/usr/bin/python3")
        .args(["-c", "import tkinter, _tkinter; print(_tkinter.__file__)"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && path.is_file()).then_some(path)
}

/// Imports `tag` unless the engine has it: a root of the host's static busybox (every applet
/// linked), bash with its libraries, `/tmp` (mode 1777) and `/workspace`, plus what `extra`
/// adds, as one `docker import` layer.
fn ensure_image(tag: &str, extra: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let present = Command::new("docker")
        .args(["image", "inspect", tag])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    let busybox = Path::new("/bin/busybox");
    let root = tools_dir().join(format!("docker-rootfs-{}", tag.replace([':', '/'], "-")));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["bin", "tmp", "workspace"] {
        std::fs::create_dir_all(root.join(dir))
            .with_context(|| format!("create {}", root.join(dir).display()))?;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))
            .context("chmod /tmp of the image")?;
    }
    std::fs::copy(busybox, root.join("bin/busybox")).context("copy busybox")?;
    copy_with_libraries(Path::new("/bin/bash"), &root)?;
    let list = Command::new(busybox)
        .arg("--list")
        .output()
        .context("busybox --list")?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let link = root.join("bin").join(applet);
        if applet != "busybox" && !link.exists() {
            std::os::unix::fs::symlink("busybox", &link)
                .with_context(|| format!("link {applet}"))?;
        }
    }
    extra(&root)?;
    let mut tar = Command::new("tar");
    tar.arg("-C")
        .arg(&root)
        .args(["-c", "."])
        .stdout(Stdio::piped());
    let mut tar = tar.spawn().context("start tar")?;
    let Some(archive) = tar.stdout.take() else {
        bail!("tar has no output");
    };
    let mut import = Command::new("docker");
    import.args(["import", "-", tag]).stdin(archive);
    run(&format!("import the test image {tag} into Docker"), import)?;
    let archived = tar.wait().context("wait for tar")?;
    if !archived.success() {
        // A partial image would be reused by every later run: remove it.
        let _ = Command::new("docker").args(["rmi", tag]).status();
        bail!("tar failed ({archived}) while building the Docker test image {tag}");
    }
    Ok(())
}

/// The display image's additions: Xvfb and xkbcomp (which Xvfb runs for the keymap) with the
/// keymaps, python3 with its standard library (no tests, caches or packages) and tkinter, Tcl/Tk's
/// script libraries, fontconfig's configuration and the DejaVu fonts.
fn add_desktop_files(root: &Path, tkinter: &Path) -> Result<()> {
    for binary in [
        Path::new("/usr/bin/Xvfb"),
        Path::new("/usr/bin/xkbcomp"),
        Path::new("/usr/bin/python3"),
        tkinter,
    ] {
        copy_with_libraries(binary, root)?;
    }
    let python = std::fs::canonicalize("/usr/bin/python3").context("resolve python3")?;
    let stdlib = Path::new("/usr/lib").join(python.file_name().context("python3's file name")?);
    for dir in [
        stdlib.as_path(),
        Path::new("/usr/share/X11/xkb"),
        Path::new("/usr/share/tcltk"),
        Path::new("/etc/fonts"),
        Path::new("/usr/share/fonts/truetype/dejavu"),
    ] {
        let target = root.join(dir.strip_prefix("/").unwrap_or(dir));
        std::fs::create_dir_all(&target).with_context(|| format!("create {}", target.display()))?;
        let mut tar = Command::new("sh");
        tar.arg("-c")
            .arg(
                "tar -C \"$0\" -c --exclude=./test --exclude=__pycache__ --exclude=./site-packages \
                 --exclude=./dist-packages --exclude=./idlelib --exclude=./ensurepip . \
                 | tar -C \"$1\" -x",
            )
            .arg(dir)
            .arg(&target);
        run(
            &format!("copy {} into the display image", dir.display()),
            tar,
        )?;
    }
    Ok(())
}

/// Copies `binary` and the shared libraries `ldd` lists for it into `root`, at their paths.
fn copy_with_libraries(binary: &Path, root: &Path) -> Result<()> {
    let ldd = Command::new("ldd")
        .arg(binary)
        .output()
        .with_context(|| format!("ldd {}", binary.display()))?;
    let mut files = vec![binary.to_path_buf()];
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let path = line
            .split("=>")
            .last()
            .and_then(|rest| rest.split_whitespace().next())
            .filter(|p| p.starts_with('/'));
        if let Some(path) = path {
            files.push(PathBuf::from(path));
        }
    }
    for file in files {
        let resolved =
            std::fs::canonicalize(&file).with_context(|| format!("resolve {}", file.display()))?;
        let relative = file.strip_prefix("/").unwrap_or(&file);
        let target = root.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create {}", parent.display()))?;
        }
        if target.exists() || target.is_symlink() {
            std::fs::remove_file(&target)
                .with_context(|| format!("replace {}", target.display()))?;
        }
        std::fs::copy(&resolved, &target)
            .with_context(|| format!("copy {} to {}", resolved.display(), target.display()))?;
    }
    Ok(())
}
