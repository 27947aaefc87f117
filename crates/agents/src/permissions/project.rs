//! A project's own rules: `<workspace>/.openmanus/rules.toml`, in the rules file's format. A
//! project may only narrow what its tools do: its deny rules apply (before every other rule),
//! its allow rules are ignored with a warning — the workspace is where a steered tool can
//! write, so a rule found there cannot be trusted to give more.

use std::path::{Path, PathBuf};

use agent_config::{PermissionRule, RuleDecision, RulesFile, RulesFileError};
use tracing::warn;

/// Where a project's rules are, in `workspace`.
#[must_use]
pub fn project_rules_path(workspace: &Path) -> PathBuf {
    workspace.join(".openmanus").join("rules.toml")
}

/// The deny rules of the project in `workspace` (none when it has no rules file).
///
/// # Errors
///
/// Its rules file cannot be read or is not a rules file.
pub fn project_denials(workspace: &Path) -> Result<Vec<PermissionRule>, RulesFileError> {
    let path = project_rules_path(workspace);
    let file = RulesFile::load(&path)?;
    let (denials, allowances): (Vec<_>, Vec<_>) = file
        .rules
        .into_iter()
        .partition(|rule| rule.decision == RuleDecision::Deny);
    if !allowances.is_empty() {
        warn!(
            path = %path.display(),
            ignored = allowances.len(),
            "a project's rules may only deny: its allow rules are ignored (put them in the \
             configuration or the user's rules file)"
        );
    }
    Ok(denials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_projects_deny_rules_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        assert!(project_denials(dir.path()).unwrap().is_empty());
        std::fs::create_dir_all(dir.path().join(".openmanus")).unwrap();
        std::fs::write(
            project_rules_path(dir.path()),
            "[[rules]]\nprefix = \"curl\"\ndecision = \"allow\"\n\
             [[rules]]\npath = \"secrets\"\ndecision = \"deny\"\n",
        )
        .unwrap();
        let kept = project_denials(dir.path()).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].path.as_deref(), Some("secrets"));
        std::fs::write(project_rules_path(dir.path()), "rules = 3\n").unwrap();
        assert!(project_denials(dir.path()).is_err());
    }
}
