//! The schema's migrations (`migrations/*.sql` for SQLite, `migrations/postgres/*.sql` for
//! PostgreSQL), embedded at build time with `include_str!`.
//!
//! sqlx's `migrate!` macro would embed them too, but its `macros` feature compiles a second
//! SQLite (for the compiler's host) in every cold build. The migrations here are what
//! `migrate!` made of the same files: the version and the description from the file's name,
//! the file's text, and sqlx's checksum of it, so databases written by earlier builds open as
//! before (`the_embedded_migrations_have_the_checksums_databases_hold` pins them).

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType, Migrator};

use crate::db::Dialect;

/// Every migration: its version, description and SQL, in order. A new migration is a new file
/// in `migrations/` and a line here; an applied one is never edited (sqlx refuses a database
/// whose applied migration's checksum changed).
const MIGRATIONS: [(i64, &str, &str); 5] = [
    (
        1,
        "sessions",
        include_str!("../migrations/0001_sessions.sql"),
    ),
    (
        2,
        "run cost",
        include_str!("../migrations/0002_run_cost.sql"),
    ),
    (
        3,
        "one record",
        include_str!("../migrations/0003_one_record.sql"),
    ),
    (4, "tasks", include_str!("../migrations/0004_tasks.sql")),
    (5, "leases", include_str!("../migrations/0005_leases.sql")),
];

/// The migrations of PostgreSQL: the schema as SQLite's migrations left it, in one file.
const PG_MIGRATIONS: [(i64, &str, &str); 2] = [
    (
        1,
        "schema",
        include_str!("../migrations/postgres/0001_schema.sql"),
    ),
    (
        2,
        "leases",
        include_str!("../migrations/postgres/0002_leases.sql"),
    ),
];

/// The embedded migrations of a dialect as a migration source for [`Migrator::new`].
#[derive(Debug)]
struct Embedded(Dialect);

impl MigrationSource<'static> for Embedded {
    fn resolve(
        self,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 'static>> {
        Box::pin(async move { Ok(migrations(self.0)) })
    }
}

/// The migrations in sqlx's form (the checksum is computed from the SQL, as sqlx does).
fn migrations(dialect: Dialect) -> Vec<Migration> {
    let set: &[(i64, &str, &str)] = match dialect {
        Dialect::Sqlite => &MIGRATIONS,
        Dialect::Postgres => &PG_MIGRATIONS,
    };
    set.iter()
        .map(|&(version, description, sql)| {
            Migration::new(
                version,
                Cow::Borrowed(description),
                MigrationType::Simple,
                Cow::Borrowed(sql),
                sql.starts_with("-- no-transaction"),
            )
        })
        .collect()
}

/// The migrator of a dialect's schema, built once per process.
pub(crate) async fn migrator(
    dialect: Dialect,
) -> Result<&'static Migrator, sqlx::migrate::MigrateError> {
    static SQLITE: OnceLock<Migrator> = OnceLock::new();
    static POSTGRES: OnceLock<Migrator> = OnceLock::new();
    let cell = match dialect {
        Dialect::Sqlite => &SQLITE,
        Dialect::Postgres => &POSTGRES,
    };
    if let Some(migrator) = cell.get() {
        return Ok(migrator);
    }
    let migrator = Migrator::new(Embedded(dialect)).await?;
    Ok(cell.get_or_init(|| migrator))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checksums sqlx's `migrate!` recorded for these files in every database written so
    /// far (SHA-384 of each file). A migration edited after release fails here first.
    const RECORDED: [(i64, &str); 5] = [
        (
            1,
            "9cc9a4eaac2ad64cb0b9884f67c44c513a13f28c41c2b55ab3d5798e4b0ac46834174f1990ec51240f45475d5de9cd41",
        ),
        (
            2,
            "eb7b575202d248adbd2504e215090180095e113021564bb40cf2a3b608ed2b3e5b1c8e6edbde4dcbd666c094e2462338",
        ),
        (
            3,
            "016e9aa8e439d0c40f1a35db177cb005b5f8558516a2e1582144e83b5ee1b71e30d69041383ff63be1f9855a69028046",
        ),
        (
            4,
            "8ea643a623ae74e39a7f412627b4b3517d0ee89086ac75923fff9dd9ef9b5bf47801e90650106ba330db02d518f3ec0e",
        ),
        (
            5,
            "c524d5e011b5f5a58cf631b7c0a14113423c07b435ae05bffda96cf172c2ddfe8d65383ef438b123b735d3c45471c267",
        ),
    ];

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn the_embedded_migrations_have_the_checksums_databases_hold() {
        let embedded: Vec<(i64, String)> = migrations(Dialect::Sqlite)
            .iter()
            .map(|m| (m.version, hex(&m.checksum)))
            .collect();
        let recorded: Vec<(i64, String)> =
            RECORDED.iter().map(|&(v, c)| (v, c.to_owned())).collect();
        assert_eq!(embedded, recorded);
    }

    #[test]
    fn every_file_in_the_migrations_directory_is_embedded_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".sql"))
            .collect();
        files.sort();
        let named: Vec<String> = MIGRATIONS
            .iter()
            .map(|&(version, description, _)| {
                format!("{version:04}_{}.sql", description.replace(' ', "_"))
            })
            .collect();
        assert_eq!(files, named);
        for (name, &(_, _, sql)) in files.iter().zip(MIGRATIONS.iter()) {
            assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), sql);
        }
    }

    /// PostgreSQL's applied migrations must never change either (a database written by this
    /// build would not open with the next).
    #[test]
    fn the_postgres_migrations_are_pinned_and_every_file_is_embedded() {
        let embedded: Vec<(i64, String)> = migrations(Dialect::Postgres)
            .iter()
            .map(|m| (m.version, hex(&m.checksum)))
            .collect();
        assert_eq!(
            embedded,
            vec![
                (
                    1,
                    "69637e77592371c5f5b5fdc24555c0e25006a002a8863d21ec182de8c5f081f965df6a1cda3f17a5da8414353a742b71".to_owned()
                ),
                (
                    2,
                    "6f8dd4c614de3573cf30718f3d7db49fd74cd4cd40b486737a8e8fbecae42c3e9defa2f7a973e9d1796e851abba3c0a5".to_owned()
                )
            ]
        );
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let named: Vec<String> = PG_MIGRATIONS
            .iter()
            .map(|&(version, description, _)| {
                format!("{version:04}_{}.sql", description.replace(' ', "_"))
            })
            .collect();
        assert_eq!(files, named);
    }
}
