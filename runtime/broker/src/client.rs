//! The worker's side: a client for the broker socket that checks the grant
//! before it connects.
//!
//! The check is a guard in the worker's own library, not an operating-system
//! boundary: the broker re-checks every id against its catalog, and a worker
//! that skips this client gains nothing the catalog does not allow.

use std::io::BufReader;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use splash_protocol::{Grant, Resource, ResourceKind};

use crate::catalog::MAX_TIMEOUT;
use crate::wire::{
    Failure, MAX_REPLY_LINE_BYTES, Reply, Request, Response, SOCKET_NAME, WIRE_VERSION, read_line,
    write_line,
};

/// The longest socket path `sockaddr_un` holds (excluding the NUL).
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// How long the client waits for the reply: the longest entry timeout plus
/// the broker's own request-read allowance.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(MAX_TIMEOUT.as_secs() + 10);

/// Why a request did not produce a response. The messages are generic on
/// purpose: they name no URL, origin, credential or catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The socket path is not absolute, not normal, or too long.
    #[error("the broker socket path is invalid")]
    InvalidSocketPath,
    /// The grant does not hold the request's id as a `network_origin`.
    #[error("the grant does not allow this network origin")]
    NotGranted,
    /// The broker could not be reached or stopped answering.
    #[error("the network broker is unavailable")]
    Unavailable,
    /// The broker refused the request.
    #[error("the network broker denied the request")]
    Denied,
    /// The request was allowed but failed.
    #[error("the network request failed")]
    Failed,
    /// The reply was not a valid broker reply.
    #[error("the network broker answered with an invalid reply")]
    Protocol,
}

/// A client for one broker socket (the worker-visible path: the policy's
/// `network-broker ... at DEST` plus `/broker.sock`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerClient {
    socket: PathBuf,
}

impl BrokerClient {
    /// A client for the socket at `socket`.
    pub fn new(socket: impl Into<PathBuf>) -> Result<Self, ClientError> {
        let socket = socket.into();
        let bytes = socket.as_os_str().as_bytes();
        let normal = bytes.len() <= MAX_SOCKET_PATH_BYTES
            && bytes.first() == Some(&b'/')
            && bytes[1..]
                .split(|&b| b == b'/')
                .all(|part| !part.is_empty() && part != b"." && part != b"..");
        if !normal {
            return Err(ClientError::InvalidSocketPath);
        }
        Ok(Self { socket })
    }

    /// A client for `broker.sock` in the worker-visible directory `dir`.
    pub fn in_directory(dir: impl AsRef<Path>) -> Result<Self, ClientError> {
        Self::new(dir.as_ref().join(SOCKET_NAME))
    }

    /// The socket path.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// Sends `request` if `grant` holds its id as a `network_origin`
    /// resource (checked before any socket is opened), and returns the
    /// origin's response. One connection per request.
    pub fn request(&self, grant: &Grant, request: &Request) -> Result<Response, ClientError> {
        let wanted = Resource::new(ResourceKind::NetworkOrigin, request.id.clone());
        if !grant.resources.contains(&wanted) {
            return Err(ClientError::NotGranted);
        }
        let stream = UnixStream::connect(&self.socket).map_err(|_| ClientError::Unavailable)?;
        stream
            .set_read_timeout(Some(CLIENT_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(CLIENT_TIMEOUT)))
            .map_err(|_| ClientError::Unavailable)?;
        let mut writer = &stream;
        write_line(&mut writer, request).map_err(|_| ClientError::Unavailable)?;
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let line = read_line(&mut BufReader::new(&stream), MAX_REPLY_LINE_BYTES)
            .map_err(|_| ClientError::Unavailable)?;
        let reply: Reply = serde_json::from_slice(&line).map_err(|_| ClientError::Protocol)?;
        match reply {
            Reply {
                version: WIRE_VERSION,
                response: Some(response),
                error: None,
            } => Ok(response),
            Reply {
                version: WIRE_VERSION,
                response: None,
                error: Some(failure),
            } => Err(match failure {
                Failure::Denied => ClientError::Denied,
                Failure::Failed => ClientError::Failed,
            }),
            _ => Err(ClientError::Protocol),
        }
    }
}

#[cfg(test)]
mod tests {
    use splash_protocol::{GrantFormat, Token};

    use super::*;
    use crate::catalog::Method;

    #[test]
    fn socket_paths_are_checked() {
        assert!(BrokerClient::new("/run/broker/broker.sock").is_ok());
        assert!(BrokerClient::in_directory("/run/broker").is_ok());
        for bad in ["relative/broker.sock", "/", "/run/../x", "/run/./x"] {
            assert_eq!(
                BrokerClient::new(bad),
                Err(ClientError::InvalidSocketPath),
                "{bad}"
            );
        }
        let long = format!("/{}", "a".repeat(MAX_SOCKET_PATH_BYTES));
        assert_eq!(BrokerClient::new(long), Err(ClientError::InvalidSocketPath));
    }

    #[test]
    fn an_ungranted_id_is_refused_before_connecting() {
        // The socket does not exist: a grant failure must be reported as
        // such, which shows that no connection was attempted.
        let client = BrokerClient::new("/nonexistent/broker.sock").expect("client");
        let grant = Grant::new(Token::new("net.fetch").expect("token"), GrantFormat::Json);
        let request = Request::new(Token::new("api.a").expect("token"), Method::Get, "/");
        assert_eq!(
            client.request(&grant, &request),
            Err(ClientError::NotGranted)
        );
        let mut granted = grant.clone();
        granted.resources.insert(Resource::new(
            ResourceKind::NetworkOrigin,
            Token::new("api.a").expect("token"),
        ));
        assert_eq!(
            client.request(&granted, &request),
            Err(ClientError::Unavailable)
        );
        let mut file_root = grant;
        file_root.resources.insert(Resource::new(
            ResourceKind::FileRoot,
            Token::new("api.a").expect("token"),
        ));
        assert_eq!(
            client.request(&file_root, &request),
            Err(ClientError::NotGranted)
        );
    }
}
