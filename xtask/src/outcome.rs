//! What a `cargo test --no-fail-fast` run passed and failed, read from its output (standard
//! output and standard error in one stream, in the order they were written), and the listing
//! printed at the end of `cargo xtask ci`.
//!
//! Cargo names each test binary before running it (`Running tests/cli.rs (target/debug/deps/
//! cli-…)`, `Doc-tests agent_core`); libtest prints `test NAME ... FAILED` for each failed test
//! and `test result: …` with the counts at the end of a binary; and after a binary that failed,
//! cargo prints `error: test failed, to rerun pass `-p PACKAGE --test cli`` — which names the
//! package and the target — followed, for a binary that crashed, by `process didn't exit
//! successfully: … (signal: 11, SIGSEGV: …)`. With `--no-fail-fast` it ends with `error: N
//! targets failed:` and the list. A test that does not compile stops the whole run with
//! `error: could not compile `PACKAGE` (test "cli") due to …`.

use std::fmt;

/// One thing that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The package (`-p` name), when cargo named it.
    pub(crate) package: Option<String>,
    /// The test target as cargo names it for a rerun (`lib`, `--test cli`, `--bin x`, `doc`),
    /// or, for a target that did not compile, as its build error does (`test "cli"`).
    pub(crate) target: String,
    /// What failed in it.
    pub(crate) what: What,
}

/// What failed in a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum What {
    /// This test (`test NAME ... FAILED`).
    Test(String),
    /// The binary failed without a failing test of its own: it crashed (a signal, an abort) or
    /// exited with an error outside any test. The cause, as cargo gave it, when it did.
    Binary(Option<String>),
    /// The target did not compile: none of the phase's tests ran.
    Build,
    /// Something else: the phase's command, and what went wrong.
    Other(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let package = self.package.as_deref().unwrap_or("(package not named)");
        write!(f, "{package} ({}): ", self.target)?;
        match &self.what {
            What::Test(name) => f.write_str(name),
            What::Binary(Some(cause)) => {
                write!(f, "the test binary failed outside its tests ({cause})")
            }
            What::Binary(None) => f.write_str("the test binary failed outside its tests"),
            What::Build => f.write_str("did not compile"),
            What::Other(text) => f.write_str(text),
        }
    }
}

/// The counts and the failures of one or more `cargo test` runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Tests that passed.
    pub(crate) passed: u64,
    /// Tests that failed, plus one for each binary that failed outside its tests and each
    /// target that did not compile (each is also in `failures`).
    pub(crate) failed: u64,
    /// Tests that were ignored (skipped).
    pub(crate) ignored: u64,
    /// Every failure, in the order the output showed them.
    pub(crate) failures: Vec<Failure>,
}

impl Outcome {
    /// Adds `other`'s counts and failures to these.
    pub(crate) fn add(&mut self, other: Outcome) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.ignored += other.ignored;
        self.failures.extend(other.failures);
    }

    /// Records a failure that is not in any output (counted once).
    pub(crate) fn fail(&mut self, failure: Failure) {
        self.failed += 1;
        self.failures.push(failure);
    }

    /// The closing line: `N passed, N failed, N skipped`.
    pub(crate) fn counts(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.ignored
        )
    }

    /// The listing of every failure, grouped by package and target (the order within a target
    /// kept), starting with `failed tests:`; empty when nothing failed.
    pub(crate) fn listing(&self) -> Vec<String> {
        if self.failures.is_empty() {
            return Vec::new();
        }
        let mut failures: Vec<&Failure> = self.failures.iter().collect();
        failures.sort_by(|a, b| (&a.package, &a.target).cmp(&(&b.package, &b.target)));
        let mut lines = vec!["failed tests:".to_owned()];
        lines.extend(failures.iter().map(|failure| format!("  {failure}")));
        lines
    }
}

/// One test binary (or doc-test run) as the output shows it.
#[derive(Debug, Default)]
struct Target {
    /// Cargo's words for it: `unittests src/lib.rs (target/debug/deps/agent_core-…)`,
    /// `tests/cli.rs (…)`, `Doc-tests agent_core`.
    running: String,
    /// The names of its tests that printed `FAILED`.
    failed_tests: Vec<String>,
    /// `test … ok` and `test … ignored` lines, for a binary that never printed its result.
    ok_lines: u64,
    ignored_lines: u64,
    /// Whether it printed `test result:`.
    finished: bool,
    /// The arguments of cargo's `to rerun pass `…`` after it, when it failed.
    rerun: Option<String>,
    /// Why the process failed, from cargo's `process didn't exit successfully: … (cause)`.
    cause: Option<String>,
}

/// Reads the output of `cargo test --no-fail-fast` (both streams, in order).
pub(crate) fn read<'a>(lines: impl IntoIterator<Item = &'a str>) -> Outcome {
    let mut outcome = Outcome::default();
    let mut targets: Vec<Target> = Vec::new();
    // After `error: N targets failed:`: the indented list of rerun arguments.
    let mut in_final_list = false;
    let mut final_list = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        if in_final_list {
            if let Some(args) = trimmed
                .strip_prefix('`')
                .and_then(|rest| rest.strip_suffix('`'))
            {
                final_list.push(args.to_owned());
                continue;
            }
            in_final_list = false;
        }
        if let Some(running) = trimmed.strip_prefix("Running ") {
            targets.push(Target {
                running: running.to_owned(),
                ..Target::default()
            });
        } else if trimmed.starts_with("Doc-tests ") {
            targets.push(Target {
                running: trimmed.to_owned(),
                ..Target::default()
            });
        } else if let Some(counts) = trimmed.strip_prefix("test result: ") {
            outcome.passed += count(counts, "passed");
            outcome.failed += count(counts, "failed");
            outcome.ignored += count(counts, "ignored");
            if let Some(target) = targets.last_mut() {
                target.finished = true;
            }
        } else if let Some(test) = trimmed.strip_prefix("test ") {
            let Some(target) = targets.last_mut() else {
                continue;
            };
            if let Some(name) = test.strip_suffix(" ... FAILED") {
                target.failed_tests.push(name.to_owned());
            } else if test.ends_with(" ... ok") {
                target.ok_lines += 1;
            } else if test.ends_with(" ... ignored") || test.contains(" ... ignored, ") {
                target.ignored_lines += 1;
            }
        } else if let Some(args) = rerun_args(trimmed) {
            if let Some(target) = targets.last_mut() {
                target.rerun = Some(args.to_owned());
            }
        } else if let Some(rest) = trimmed.strip_prefix("process didn't exit successfully: ") {
            if let Some(target) = targets.last_mut() {
                target.cause = last_parenthesised(rest).map(str::to_owned);
            }
        } else if let Some(rest) = trimmed.strip_prefix("error: could not compile `") {
            // error: could not compile `openmanus-cli` (test "cli") due to 2 previous errors
            let (package, rest) = rest.split_once('`').unwrap_or((rest, ""));
            let target = rest
                .trim_start()
                .strip_prefix('(')
                .and_then(|r| r.split_once(')'))
                .map_or("build", |(kind, _)| kind);
            outcome.fail(Failure {
                package: Some(package.to_owned()),
                target: target.to_owned(),
                what: What::Build,
            });
        } else if trimmed.starts_with("error: ") && trimmed.ends_with(" targets failed:")
            || trimmed == "error: 1 target failed:"
        {
            in_final_list = true;
        }
    }
    let mut reported = Vec::new();
    for target in targets {
        let (package, name) = match &target.rerun {
            Some(args) => split_rerun(args),
            None => (None, target_from_running(&target.running)),
        };
        for test in &target.failed_tests {
            outcome.failures.push(Failure {
                package: package.clone(),
                target: name.clone(),
                what: What::Test(test.clone()),
            });
        }
        if !target.finished {
            // It never printed its result: count what it printed before it stopped.
            outcome.passed += target.ok_lines;
            outcome.ignored += target.ignored_lines;
            outcome.failed += target.failed_tests.len() as u64;
        }
        let failed_outside_tests =
            target.rerun.is_some() && (!target.finished || target.failed_tests.is_empty());
        if failed_outside_tests {
            outcome.fail(Failure {
                package,
                target: name,
                what: What::Binary(target.cause),
            });
        }
        if let Some(args) = target.rerun {
            reported.push(args);
        }
    }
    // A target in cargo's closing list whose own lines were not seen.
    for args in final_list {
        if !reported.contains(&args) {
            let (package, target) = split_rerun(&args);
            outcome.fail(Failure {
                package,
                target,
                what: What::Binary(Some("its output was not seen".to_owned())),
            });
        }
    }
    outcome
}

/// `-p openmanus-cli --test cli` from `error: test failed, to rerun pass `-p openmanus-cli
/// --test cli`` (or `error: doctest failed, …`).
fn rerun_args(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("error: test failed, to rerun pass `")
        .or_else(|| line.strip_prefix("error: doctest failed, to rerun pass `"))?;
    rest.strip_suffix('`')
}

/// The package and the target of rerun arguments: `-p x --lib` is (`x`, `lib`), `-p x --test
/// cli` is (`x`, `--test cli`), `-p x --doc` is (`x`, `doc`).
fn split_rerun(args: &str) -> (Option<String>, String) {
    let mut package = None;
    let mut rest = Vec::new();
    let mut words = args.split_whitespace();
    while let Some(word) = words.next() {
        if word == "-p" || word == "--package" {
            package = words.next().map(str::to_owned);
        } else {
            rest.push(word);
        }
    }
    let target = match rest.as_slice() {
        ["--lib"] => "lib".to_owned(),
        ["--doc"] => "doc".to_owned(),
        [] => "all targets".to_owned(),
        other => other.join(" "),
    };
    (package, target)
}

/// A target's name from cargo's `Running` words, when no rerun line named it:
/// `unittests src/lib.rs (…)` is `lib`, `tests/cli.rs (…)` is `--test cli`, `Doc-tests x` is
/// `doc`; anything else is kept as it is.
fn target_from_running(running: &str) -> String {
    let source = running.split(" (").next().unwrap_or(running);
    if running.starts_with("Doc-tests ") {
        return "doc".to_owned();
    }
    if source == "unittests src/lib.rs" {
        return "lib".to_owned();
    }
    if let Some(test) = source
        .strip_prefix("tests/")
        .and_then(|file| file.strip_suffix(".rs"))
    {
        return format!("--test {}", test.trim_end_matches("/main"));
    }
    source.to_owned()
}

/// The text inside the last `(…)` of `line`: `signal: 11, SIGSEGV: invalid memory reference`.
fn last_parenthesised(line: &str) -> Option<&str> {
    let inner = line.trim_end().strip_suffix(')')?;
    let open = inner.rfind(" (")?;
    Some(&inner[open + 2..])
}

/// The number before `word` in a `test result:` line (`ok. 3 passed; 0 failed; ...`).
fn count(line: &str, word: &str) -> u64 {
    line.split([';', '.'])
        .filter_map(|part| part.trim().strip_suffix(word))
        .find_map(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `cargo test --workspace --no-fail-fast` run as cargo 1.95 prints it (both streams):
    /// a failing unit test in `openmanus-agent-react`, a failing integration test in
    /// `openmanus-agent-a2a`, a binary that aborts (no result line) in `openmanus-cli`, a
    /// failed doc-test in `openmanus-agent-core`, and passing binaries around them.
    const FAILING_RUN: &str = "\
   Compiling openmanus-agent-react v0.1.0 (/work/crates/agent-react)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 41.20s
     Running unittests src/lib.rs (target/debug/deps/agent_core-0f1e2d3c4b5a6978)

running 3 tests
test memory::tests::keeps_turns ... ok
test state::tests::slow ... ignored
test memory::tests::drops_whole_turns ... ok

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running unittests src/lib.rs (target/debug/deps/agent_react-8a6a4a56d14e8148)

running 2 tests
test tests::think_then_act ... ok
test tests::planted_failure ... FAILED

failures:

---- tests::planted_failure stdout ----

thread 'tests::planted_failure' (13925) panicked at crates/agent-react/src/lib.rs:11:26:
assertion `left == right` failed
  left: 2
 right: 3
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::planted_failure

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.17s

error: test failed, to rerun pass `-p openmanus-agent-react --lib`
     Running tests/client.rs (target/debug/deps/client-04b5d311d386c8df)

running 3 tests
test sends_a_message ... ok
test planted_failure_too ... FAILED
test gets_the_card ... ok

failures:

---- planted_failure_too stdout ----

thread 'planted_failure_too' (13929) panicked at crates/agent-a2a/tests/client.rs:2:27:
boom

failures:
    planted_failure_too

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.18s

error: test failed, to rerun pass `-p openmanus-agent-a2a --test client`
     Running tests/cli.rs (target/debug/deps/cli-0cbfef6dd73cb89a)

running 3 tests
test prints_help ... ok
test skipped_here ... ignored, needs a terminal
error: test failed, to rerun pass `-p openmanus-cli --test cli`

Caused by:
  process didn't exit successfully: `/work/target/debug/deps/cli-0cbfef6dd73cb89a` (signal: 11, SIGSEGV: invalid memory reference)
   Doc-tests agent_core

running 2 tests
test crates/agent-core/src/lib.rs - (line 3) ... FAILED
test crates/agent-core/src/memory.rs - memory::Memory (line 20) ... ok

failures:

---- crates/agent-core/src/lib.rs - (line 3) stdout ----
Test executable failed (exit status: 101).

failures:
    crates/agent-core/src/lib.rs - (line 3)

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.11s

all doctests ran in 0.47s; merged doctests compilation took 0.35s
error: doctest failed, to rerun pass `-p openmanus-agent-core --doc`
   Doc-tests agent_react

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: 4 targets failed:
    `-p openmanus-agent-react --lib`
    `-p openmanus-agent-a2a --test client`
    `-p openmanus-cli --test cli`
    `-p openmanus-agent-core --doc`
";

    fn failure(package: &str, target: &str, what: What) -> Failure {
        Failure {
            package: Some(package.to_owned()),
            target: target.to_owned(),
            what,
        }
    }

    #[test]
    fn failures_in_two_crates_a_crash_and_a_doctest_are_each_listed() {
        let outcome = read(FAILING_RUN.lines());
        assert_eq!(
            outcome.failures,
            vec![
                failure(
                    "openmanus-agent-react",
                    "lib",
                    What::Test("tests::planted_failure".into())
                ),
                failure(
                    "openmanus-agent-a2a",
                    "--test client",
                    What::Test("planted_failure_too".into())
                ),
                failure(
                    "openmanus-cli",
                    "--test cli",
                    What::Binary(Some("signal: 11, SIGSEGV: invalid memory reference".into()))
                ),
                failure(
                    "openmanus-agent-core",
                    "doc",
                    What::Test("crates/agent-core/src/lib.rs - (line 3)".into())
                ),
            ]
        );
        // Results: 2 + 1 + 2 + 1 passed, 1 + 1 + 1 failed, 1 ignored; the crashed binary adds
        // its one `ok` and one `ignored` line, and counts once as failed.
        assert_eq!((outcome.passed, outcome.failed, outcome.ignored), (7, 4, 2));
        assert_eq!(outcome.counts(), "7 passed, 4 failed, 2 skipped");
    }

    #[test]
    fn the_listing_groups_by_package_and_target() {
        let outcome = read(FAILING_RUN.lines());
        assert_eq!(
            outcome.listing(),
            vec![
                "failed tests:",
                "  openmanus-agent-a2a (--test client): planted_failure_too",
                "  openmanus-agent-core (doc): crates/agent-core/src/lib.rs - (line 3)",
                "  openmanus-agent-react (lib): tests::planted_failure",
                "  openmanus-cli (--test cli): the test binary failed outside its tests \
                 (signal: 11, SIGSEGV: invalid memory reference)",
            ]
        );
    }

    #[test]
    fn an_all_pass_run_lists_nothing() {
        let run = "\
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.20s
     Running unittests src/lib.rs (target/debug/deps/agent_core-0f1e2d3c4b5a6978)

running 2 tests
test a ... ok
test b ... ignored

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/cli.rs (target/debug/deps/cli-0cbfef6dd73cb89a)

running 3 tests
test c ... ok
test d ... ok
test e ... ok

test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s

   Doc-tests agent_core

running 1 test
test crates/agent-core/src/lib.rs - (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.30s

";
        let outcome = read(run.lines());
        assert_eq!(outcome.failures, Vec::new());
        assert_eq!(outcome.counts(), "5 passed, 0 failed, 1 skipped");
        assert!(outcome.listing().is_empty());
    }

    #[test]
    fn a_target_that_does_not_compile_is_a_build_failure() {
        let run = "\
   Compiling openmanus-cli v0.1.0 (/work/crates/openmanus-cli)
error[E0308]: mismatched types
 --> crates/openmanus-cli/tests/cli.rs:1:17
  |
1 | fn x() -> u32 { \"no\" }
  |                 ^^^^ expected `u32`, found `&str`

For more information about this error, try `rustc --explain E0308`.
error: could not compile `openmanus-cli` (test \"cli\") due to 1 previous error
";
        let outcome = read(run.lines());
        assert_eq!(
            outcome.failures,
            vec![failure("openmanus-cli", "test \"cli\"", What::Build)]
        );
        assert_eq!(outcome.counts(), "0 passed, 1 failed, 0 skipped");
        assert_eq!(
            outcome.listing()[1],
            "  openmanus-cli (test \"cli\"): did not compile"
        );
    }

    #[test]
    fn a_binary_that_fails_after_its_tests_passed_is_listed() {
        // Every test passed, yet the process exited non-zero (a leak checker, an exit in a
        // destructor): cargo's rerun line is the only sign.
        let run = "\
     Running tests/store.rs (target/debug/deps/store-11aa22bb33cc44dd)

running 1 test
test opens ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass `-p openmanus-agent-store --test store`

Caused by:
  process didn't exit successfully: `/work/target/debug/deps/store-11aa22bb33cc44dd` (exit status: 3)
error: 1 target failed:
    `-p openmanus-agent-store --test store`
";
        let outcome = read(run.lines());
        assert_eq!(
            outcome.failures,
            vec![failure(
                "openmanus-agent-store",
                "--test store",
                What::Binary(Some("exit status: 3".into()))
            )]
        );
        assert_eq!(outcome.counts(), "1 passed, 1 failed, 0 skipped");
    }

    #[test]
    fn a_target_in_the_closing_list_alone_is_still_listed() {
        let run = "\
error: 1 target failed:
    `-p openmanus-agent-web --test search`
";
        let outcome = read(run.lines());
        assert_eq!(outcome.failed, 1);
        assert_eq!(
            outcome.failures[0].package.as_deref(),
            Some("openmanus-agent-web")
        );
        assert_eq!(outcome.failures[0].target, "--test search");
    }

    #[test]
    fn without_a_rerun_line_the_target_comes_from_cargos_running_line() {
        let run = "\
     Running tests/cli.rs (target/debug/deps/cli-0cbfef6dd73cb89a)

running 1 test
test fails ... FAILED

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";
        let outcome = read(run.lines());
        assert_eq!(
            outcome.failures,
            vec![Failure {
                package: None,
                target: "--test cli".into(),
                what: What::Test("fails".into()),
            }]
        );
        assert_eq!(
            outcome.listing()[1],
            "  (package not named) (--test cli): fails"
        );
    }

    #[test]
    fn outcomes_add_up() {
        let mut total = read(FAILING_RUN.lines());
        total.add(Outcome {
            passed: 3,
            failed: 0,
            ignored: 1,
            failures: Vec::new(),
        });
        total.fail(Failure {
            package: None,
            target: "lean tests".into(),
            what: What::Other("cargo test exited with 101".into()),
        });
        assert_eq!(total.counts(), "10 passed, 5 failed, 3 skipped");
        assert_eq!(total.failures.len(), 5);
    }

    #[test]
    fn count_reads_each_field() {
        let line = "FAILED. 12 passed; 3 failed; 4 ignored; 0 measured; 0 filtered out";
        assert_eq!(count(line, "passed"), 12);
        assert_eq!(count(line, "failed"), 3);
        assert_eq!(count(line, "ignored"), 4);
    }
}
