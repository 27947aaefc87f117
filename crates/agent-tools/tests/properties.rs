//! Property tests (issue 21): tool arguments parse or fail cleanly whatever the model sends, the
//! planning tool never panics on any arguments, and the editor's replace / insert / undo round
//! trips restore the file exactly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use agent_tools::{
    BashArgs, PlanningArgs, PlanningTool, StrReplaceEditor, Tool, ToolCollection, ToolContext,
    ToolError, parse_args,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    "[a-z_]{1,10}",
                    Just("command".to_owned()),
                    Just("steps".to_owned())
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #[test]
    fn any_json_parses_or_is_an_invalid_arguments_error(value in json_value()) {
        for result in [
            parse_args::<BashArgs>(value.clone()).map(|_| ()),
            parse_args::<PlanningArgs>(value.clone()).map(|_| ()),
        ] {
            if let Err(error) = result {
                prop_assert!(matches!(error, ToolError::InvalidArguments(_)), "{error}");
            }
        }
        if !value.is_object() {
            prop_assert!(parse_args::<BashArgs>(value).is_err());
        }
    }

    #[test]
    fn well_formed_arguments_round_trip(command in any::<String>(), restart in any::<bool>()) {
        let args: BashArgs = parse_args(json!({"command": command, "restart": restart})).unwrap();
        prop_assert_eq!(args.command, command);
        prop_assert_eq!(args.restart, restart);
    }

    #[test]
    fn the_planning_tool_never_panics_on_any_arguments(calls in proptest::collection::vec(json_value(), 1..6)) {
        let tool = PlanningTool::new();
        runtime().block_on(async {
            for args in calls {
                let _ = tool.execute(args, &ToolContext::default()).await;
            }
        });
    }
}

/// A text of a few lines, no tabs (tab matching has rules of its own).
fn text() -> impl Strategy<Value = String> {
    "[a-z ]{0,12}(\n[a-z ]{0,12}){0,8}\n?"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn replace_insert_and_undo_round_trip(
        original in text(),
        start in any::<usize>(),
        len in 1usize..6,
        replacement in "[A-Z\n]{0,8}",
        line in any::<usize>(),
        inserted in "[0-9\n]{0,8}",
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap().join("f.txt");
        let path_text = path.display().to_string();
        let mut tools = ToolCollection::new();
        tools.add_tool(StrReplaceEditor::new().with_workspace_root(dir.path()));
        let call = |args: Value| {
            let tools = &tools;
            async move { tools.execute("str_replace_editor", args, &ToolContext::default()).await }
        };
        let read = || std::fs::read_to_string(&path).unwrap();
        runtime().block_on(async {
            call(json!({"command": "create", "path": path_text, "file_text": original})).await.unwrap();
            prop_assert_eq!(read(), original.clone());

            // Replace a piece that occurs exactly once, if there is one.
            let chars: Vec<char> = original.chars().collect();
            if !chars.is_empty() {
                let from = start % chars.len();
                let to = (from + len).min(chars.len());
                let old: String = chars[from..to].iter().collect();
                if original.matches(old.as_str()).count() == 1 {
                    call(json!({"command": "str_replace", "path": path_text, "old_str": old, "new_str": replacement})).await.unwrap();
                    prop_assert_eq!(read(), original.replacen(old.as_str(), &replacement, 1));
                    call(json!({"command": "undo_edit", "path": path_text})).await.unwrap();
                    prop_assert_eq!(read(), original.clone());
                }
            }

            // Insert after any line (0: at the top).
            let lines: Vec<&str> = original.split('\n').collect();
            let at = line % (lines.len() + 1);
            call(json!({"command": "insert", "path": path_text, "insert_line": at, "new_str": inserted})).await.unwrap();
            let mut expected: Vec<&str> = lines[..at].to_vec();
            expected.extend(inserted.split('\n'));
            expected.extend(&lines[at..]);
            prop_assert_eq!(read(), expected.join("\n"));
            call(json!({"command": "undo_edit", "path": path_text})).await.unwrap();
            prop_assert_eq!(read(), original.clone());
            Ok(())
        })?;
    }

    #[test]
    fn any_editor_arguments_are_answered_without_panicking(args in json_value()) {
        let dir = tempfile::tempdir().unwrap();
        let mut tools = ToolCollection::new();
        // Confined to an empty directory: random paths cannot touch anything else.
        tools.add_tool(StrReplaceEditor::new().with_workspace_root(dir.path()));
        runtime().block_on(async {
            let _ = tools.execute("str_replace_editor", args, &ToolContext::default()).await;
        });
    }
}
