//! What `trainctl operator`'s flags decide: the [`Settings`] the operator runs with.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;

use trainctl_api::JobKind;
use trainctl_engine::BuildOptions;

use super::leader::LeaseSettings;
use super::rate_limit::RateLimits;

/// The kinds watched without `--enable-scheme` only where their CRD is installed: MXJob, which
/// upstream dropped in v1.9, so that most clusters have no `mxjobs.kubeflow.org` (a watch of a
/// resource not served would keep the operator from ever being ready).
pub const WATCHED_WHERE_INSTALLED: [JobKind; 1] = [JobKind::MXJob];

/// Everything the operator runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The kinds that get a controller (`--enable-scheme`), each once, in [`JobKind::ALL`]'s
    /// order.
    pub kinds: Vec<JobKind>,
    /// The kinds that get a controller only where the API server serves them (their CRD is
    /// installed), asked at start: without `--enable-scheme`, [`WATCHED_WHERE_INSTALLED`].
    pub kinds_where_installed: Vec<JobKind>,
    /// The namespaces watched (`--namespace`); empty: every namespace.
    pub namespaces: Vec<String>,
    /// How pods and services are built (cluster domain, gang scheduler, init images).
    pub build: BuildOptions,
    /// How many reconciles of one kind run at once (`--controller-threads`).
    pub controller_threads: usize,
    /// The client's request rate (`--kube-api-qps`, `--kube-api-burst`).
    pub api_limits: RateLimits,
    /// Leader election, when `--leader-elect` is on.
    pub leader_election: Option<LeaseSettings>,
    /// Where `/metrics` is served (`--metrics-bind-address`).
    pub metrics_address: BindAddress,
    /// Where `/healthz` and `/readyz` are served (`--health-probe-bind-address`).
    pub health_address: BindAddress,
}

/// A listen address as controller-runtime's flags take it: `HOST:PORT`, `:PORT` (every IPv4
/// interface), or `0` (disabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindAddress {
    /// The endpoint is not served.
    Disabled,
    /// The endpoint listens here.
    Listen(SocketAddr),
}

impl BindAddress {
    /// The socket address, unless disabled.
    #[must_use]
    pub fn socket(self) -> Option<SocketAddr> {
        match self {
            BindAddress::Disabled => None,
            BindAddress::Listen(address) => Some(address),
        }
    }
}

/// A listen address that is none of the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a listen address: expected HOST:PORT with an IP address (`127.0.0.1:8080`, \
     `[::]:8080`), `:PORT` for every interface, or `0` to disable"
)]
pub struct InvalidBindAddress(pub String);

impl FromStr for BindAddress {
    type Err = InvalidBindAddress;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "0" {
            return Ok(BindAddress::Disabled);
        }
        if let Some(port) = text.strip_prefix(':') {
            let port = port
                .parse::<u16>()
                .map_err(|_| InvalidBindAddress(text.to_owned()))?;
            return Ok(BindAddress::Listen(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                port,
            )));
        }
        text.parse::<SocketAddr>()
            .map(BindAddress::Listen)
            .map_err(|_| InvalidBindAddress(text.to_owned()))
    }
}

impl fmt::Display for BindAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindAddress::Disabled => f.write_str("0"),
            BindAddress::Listen(address) => address.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_take_controller_runtime_forms() {
        assert_eq!("0".parse(), Ok(BindAddress::Disabled));
        assert_eq!(
            ":8080".parse(),
            Ok(BindAddress::Listen(
                "0.0.0.0:8080".parse().expect("an address")
            ))
        );
        assert_eq!(
            "127.0.0.1:9000".parse(),
            Ok(BindAddress::Listen(
                "127.0.0.1:9000".parse().expect("an address")
            ))
        );
        assert_eq!(
            "[::]:8081".parse(),
            Ok(BindAddress::Listen(
                "[::]:8081".parse().expect("an address")
            ))
        );
        for wrong in ["8080", ":http", "localhost:8080", ":70000", ""] {
            assert_eq!(
                wrong.parse::<BindAddress>(),
                Err(InvalidBindAddress(wrong.to_owned())),
                "{wrong}"
            );
        }
    }

    #[test]
    fn a_bind_address_prints_as_it_parses() {
        for text in ["0", "0.0.0.0:8080", "[::1]:8081"] {
            let address: BindAddress = text.parse().expect("valid");
            assert_eq!(address.to_string(), text);
        }
    }
}
