//! Shared by the bench harness and the differential tester: [`client`], a small blocking
//! MySQL client, and [`servers`], private MariaDB and `quarry serve` instances started
//! fresh and stopped by PID. Neither the server nor the engines depend on this crate.

pub mod client;
pub mod servers;
