#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The test kit's PostgreSQL: a cluster of its own, started, used and stopped by the test.

use agent_testkit::PgCluster;

#[test]
fn a_cluster_starts_takes_databases_and_stops() {
    let mut cluster = PgCluster::start().unwrap();
    let pid = cluster.pid().expect("running");
    assert_eq!(cluster.psql("SELECT 1 + 1").unwrap(), "2");
    let url = cluster.create_database("store_a").unwrap();
    assert_eq!(
        url,
        format!("postgres://openmanus@127.0.0.1:{}/store_a", cluster.port())
    );
    assert_eq!(
        cluster
            .psql("SELECT datname FROM pg_database WHERE datname = 'store_a'")
            .unwrap(),
        "store_a"
    );
    // A name that is not plain is refused before any SQL is sent.
    assert!(cluster.create_database("a; DROP DATABASE store_a").is_err());
    // The same name twice: PostgreSQL's own refusal comes back as the error.
    let twice = cluster.create_database("store_a").unwrap_err().to_string();
    assert!(twice.contains("already exists"), "{twice}");

    cluster.stop().unwrap();
    assert_eq!(cluster.pid(), None);
    // The server is gone: its process too, and nothing answers on its port.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert!(std::net::TcpStream::connect(("127.0.0.1", cluster.port())).is_err());
}
