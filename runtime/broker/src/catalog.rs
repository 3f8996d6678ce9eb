//! The reviewed catalog a broker serves: which opaque `network_origin` ids
//! exist, where each one goes, what a worker may send, and the bounds.
//!
//! A catalog is trusted host configuration. It is built in host code, checked
//! entry by entry when it is built, and never shown to a worker: the worker
//! names an id and nothing else about the destination.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use splash_protocol::{CapabilityManifest, ResourceKind, Token, TokenError};

use zeroize::Zeroize;

/// At most this many entries in one catalog.
pub const MAX_CATALOG_ENTRIES: usize = 128;
/// Ceiling of [`Limits::max_request_bytes`] and [`Limits::max_response_bytes`].
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Ceiling of [`Limits::timeout`].
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest request path (origin-form request target, query included).
pub const MAX_PATH_BYTES: usize = 2048;
/// The longest host-held credential value.
pub const MAX_CREDENTIAL_BYTES: usize = 4096;
/// The most redirects a [`Redirects::SameOrigin`] policy may follow.
pub const MAX_REDIRECT_HOPS: u8 = 5;

/// Request header names a worker may set (lowercase). Everything else,
/// including `host`, `authorization`, `cookie` and every hop-by-hop header, is
/// refused.
pub const WORKER_REQUEST_HEADERS: &[&str] = &[
    "accept",
    "accept-language",
    "content-type",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-unmodified-since",
];

/// Response header names returned to a worker (lowercase); the others,
/// including `location` and `set-cookie`, are dropped.
pub const WORKER_RESPONSE_HEADERS: &[&str] = &[
    "cache-control",
    "content-language",
    "content-type",
    "etag",
    "last-modified",
    "retry-after",
];

/// Header names a credential may not use: the broker writes these itself.
const RESERVED_HEADERS: &[&str] = &[
    "connection",
    "content-length",
    "expect",
    "host",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Which kind of catalog a broker serves (the policy's `network-broker
/// endpoint` or `network-broker origin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogKind {
    /// Each id is one fixed method and path on one origin.
    Endpoint,
    /// Each id is one exact origin; the worker chooses the path and one of
    /// the entry's methods.
    Origin,
}

impl fmt::Display for CatalogKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Endpoint => "endpoint",
            Self::Origin => "origin",
        })
    }
}

/// An HTTP request method the broker can send.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl Method {
    /// The method as it appears on the request line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Patch => "PATCH",
            Self::Delete => "DELETE",
        }
    }
}

/// Why a catalog, an entry or a credential was refused at setup. These are
/// host errors and name the problem precisely; nothing here reaches a worker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The id is not a token.
    #[error("catalog id `{id}` is not a token: {reason}")]
    Id {
        /// The refused id.
        id: String,
        /// Why.
        reason: TokenError,
    },
    /// `https://` was asked for.
    #[error("`{url}`: https origins are not supported by this broker (it has no TLS client)")]
    TlsUnsupported {
        /// The refused URL.
        url: String,
    },
    /// The URL is not `http://HOST[:PORT]` (plus a path for an endpoint).
    #[error("`{url}` is not a valid origin: {reason}")]
    Url {
        /// The refused URL.
        url: String,
        /// Why.
        reason: UrlDefect,
    },
    /// An endpoint path is not an origin-form request target.
    #[error("path `{path}` is not allowed: {reason}")]
    Path {
        /// The refused path.
        path: String,
        /// Why.
        reason: PathDefect,
    },
    /// A bound is zero or above its ceiling.
    #[error("{what} {value} is outside 1..={max}")]
    Bound {
        /// Which bound.
        what: &'static str,
        /// The refused value.
        value: u128,
        /// Its ceiling.
        max: u128,
    },
    /// An origin entry allows no method.
    #[error("origin entry `{0}` allows no method")]
    NoMethods(Token),
    /// The credential's header name (lowercased) is invalid or reserved.
    #[error("credential header `{0}` is not allowed: {1}")]
    CredentialHeader(String, HeaderDefect),
    /// The credential value is not a printable, bounded header value.
    #[error(
        "credential value must be 1..={MAX_CREDENTIAL_BYTES} printable ASCII bytes without surrounding spaces"
    )]
    CredentialValue,
    /// An entry of the other kind was inserted.
    #[error("entry `{id}` is an {found} entry; this is an {expected} catalog")]
    KindMismatch {
        /// The entry.
        id: Token,
        /// The catalog's kind.
        expected: CatalogKind,
        /// The entry's kind.
        found: CatalogKind,
    },
    /// The id is already in the catalog.
    #[error("catalog id `{0}` appears twice")]
    Duplicate(Token),
    /// The catalog is full.
    #[error("a catalog holds at most {MAX_CATALOG_ENTRIES} entries")]
    TooManyEntries,
    /// The catalog has no entries.
    #[error("the catalog is empty")]
    Empty,
    /// The catalog's ids are not the manifest's `network_origin` ids.
    #[error(
        "the catalog ids do not equal the manifest's network_origin ids (only in the catalog: {only_catalog:?}; only in the manifest: {only_manifest:?})"
    )]
    ManifestMismatch {
        /// Ids only the catalog has.
        only_catalog: Vec<Token>,
        /// Ids only the manifest has.
        only_manifest: Vec<Token>,
    },
}

/// Why a URL is not a valid origin or endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlDefect {
    /// A scheme other than `http://`.
    #[error("only `http://` URLs are supported")]
    Scheme,
    /// User information (`user@`).
    #[error("user information is not allowed")]
    UserInfo,
    /// A fragment, or a query without a path.
    #[error("a fragment or a query without a path")]
    FragmentOrQuery,
    /// A port that is not a number.
    #[error("the port is not a number")]
    PortNotANumber,
    /// A port above 65535.
    #[error("the port is out of range")]
    PortOutOfRange,
    /// Port 0.
    #[error("port 0")]
    PortZero,
    /// A host that is neither a lowercase name nor an IP literal.
    #[error("the host must be a lowercase name or an IP literal")]
    Host,
    /// A path on an origin.
    #[error("an origin has no path")]
    OriginWithPath,
}

/// Why an endpoint path is not an origin-form request target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathDefect {
    /// It does not start with exactly one `/`.
    #[error("it must start with a single `/`")]
    Start,
    /// It is longer than [`MAX_PATH_BYTES`].
    #[error("it is too long")]
    TooLong,
    /// It holds a byte that is not visible ASCII, or `#` or `\`.
    #[error("it may hold only visible ASCII without `#` or `\\`")]
    Byte,
}

/// Why a credential's header name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderDefect {
    /// It is not an HTTP header name.
    #[error("it is not a header name")]
    NotAHeaderName,
    /// The broker writes it itself.
    #[error("the broker writes it itself")]
    Reserved,
    /// A worker may set it.
    #[error("a worker may set it")]
    WorkerHeader,
}

/// A reviewed plain-HTTP origin: `http://HOST[:PORT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    host: String,
    port: u16,
}

fn url_error(url: &str, reason: UrlDefect) -> CatalogError {
    CatalogError::Url {
        url: url.to_owned(),
        reason,
    }
}

fn valid_host(host: &str) -> bool {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<std::net::Ipv6Addr>().is_ok();
    }
    !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && !host.starts_with(['.', '-'])
        && !host.ends_with(['.', '-'])
        && !host.contains("..")
}

impl Origin {
    /// Parses `http://HOST[:PORT]` with an optional trailing `/`. `HOST` is a
    /// lowercase DNS name, an IPv4 literal or a bracketed IPv6 literal; no
    /// user information, query or fragment.
    pub fn parse(url: &str) -> Result<Self, CatalogError> {
        let (origin, path) = split_url(url)?;
        if !path.is_empty() && path != "/" {
            return Err(url_error(url, UrlDefect::OriginWithPath));
        }
        Ok(origin)
    }

    /// The host as written (brackets kept for IPv6).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (80 when none was written).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `Host` header value.
    pub(crate) fn authority(&self) -> String {
        if self.port == 80 {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The host name or literal to connect to (brackets removed).
    pub(crate) fn connect_host(&self) -> &str {
        self.host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&self.host)
    }
}

/// Splits `http://AUTHORITY/PATH` into the origin and the path (`""` when
/// there is none).
pub(crate) fn split_url(url: &str) -> Result<(Origin, &str), CatalogError> {
    let lower = url
        .get(..8)
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if lower.starts_with("https://") {
        return Err(CatalogError::TlsUnsupported {
            url: url.to_owned(),
        });
    }
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| url_error(url, UrlDefect::Scheme))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(url_error(url, UrlDefect::UserInfo));
    }
    if authority.contains(['?', '#']) || path.contains('#') {
        return Err(url_error(url, UrlDefect::FragmentOrQuery));
    }
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => {
            let port = &authority[i + 1..];
            if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(url_error(url, UrlDefect::PortNotANumber));
            }
            let port: u16 = port
                .parse()
                .map_err(|_| url_error(url, UrlDefect::PortOutOfRange))?;
            if port == 0 {
                return Err(url_error(url, UrlDefect::PortZero));
            }
            (&authority[..i], port)
        }
        _ => (authority, 80),
    };
    if !valid_host(host) {
        return Err(url_error(url, UrlDefect::Host));
    }
    Ok((
        Origin {
            host: host.to_owned(),
            port,
        },
        path,
    ))
}

/// Checks an origin-form request target: starts with `/` (not `//`), at most
/// [`MAX_PATH_BYTES`], visible ASCII only, no `#` and no `\`.
pub(crate) fn check_path(path: &str) -> Result<(), PathDefect> {
    if !path.starts_with('/') || path.starts_with("//") {
        return Err(PathDefect::Start);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathDefect::TooLong);
    }
    if !path
        .bytes()
        .all(|b| (0x21..=0x7e).contains(&b) && b != b'#' && b != b'\\')
    {
        return Err(PathDefect::Byte);
    }
    Ok(())
}

/// Per-entry request bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most body bytes a worker may send.
    pub max_request_bytes: usize,
    /// The most response body bytes the broker reads; a longer body fails
    /// the request.
    pub max_response_bytes: usize,
    /// The whole exchange (connect, send, receive, every redirect hop).
    pub timeout: Duration,
}

impl Default for Limits {
    /// 16 KiB request, 64 KiB response, 15 s.
    fn default() -> Self {
        Self {
            max_request_bytes: 16 * 1024,
            max_response_bytes: 64 * 1024,
            timeout: Duration::from_secs(15),
        }
    }
}

impl Limits {
    fn check(&self) -> Result<(), CatalogError> {
        let bound = |what, value: usize, max: usize| {
            if value == 0 || value > max {
                Err(CatalogError::Bound {
                    what,
                    value: value as u128,
                    max: max as u128,
                })
            } else {
                Ok(())
            }
        };
        bound("max request bytes", self.max_request_bytes, MAX_BODY_BYTES)?;
        bound(
            "max response bytes",
            self.max_response_bytes,
            MAX_BODY_BYTES,
        )?;
        if self.timeout.is_zero() || self.timeout > MAX_TIMEOUT {
            return Err(CatalogError::Bound {
                what: "timeout (ms)",
                value: self.timeout.as_millis(),
                max: MAX_TIMEOUT.as_millis(),
            });
        }
        Ok(())
    }
}

/// What the broker does with a `3xx` answer that carries a `Location`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Redirects {
    /// The request fails (the default).
    #[default]
    Refuse,
    /// Follow a redirect to the same origin (scheme, host and port), at most
    /// `max_hops` times; a redirect anywhere else fails the request.
    SameOrigin {
        /// 1..=[`MAX_REDIRECT_HOPS`].
        max_hops: u8,
    },
}

/// A host-held credential sent as one request header. The worker never
/// sees it: it cannot set that header, the value is never echoed, and
/// failures are generic. `Debug` prints no value; the bytes are wiped on
/// drop.
pub struct Credential {
    header: String,
    value: Vec<u8>,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("header", &self.header)
            .field("value", &"<redacted>")
            .finish()
    }
}

impl Drop for Credential {
    fn drop(&mut self) {
        self.value.zeroize();
    }
}

impl Credential {
    /// A credential sent as `header: value`. The header name is lowercased;
    /// it must be a header token, not one the broker writes itself (`host`,
    /// `content-length`, hop-by-hop headers) and not one a worker may set.
    pub fn header(name: &str, value: impl Into<Vec<u8>>) -> Result<Self, CatalogError> {
        let mut value = value.into();
        let header = name.to_ascii_lowercase();
        let reason = if header.is_empty() || !header.bytes().all(is_header_name_byte) {
            Some(HeaderDefect::NotAHeaderName)
        } else if RESERVED_HEADERS.contains(&header.as_str()) {
            Some(HeaderDefect::Reserved)
        } else if WORKER_REQUEST_HEADERS.contains(&header.as_str()) {
            Some(HeaderDefect::WorkerHeader)
        } else {
            None
        };
        if let Some(reason) = reason {
            value.zeroize();
            return Err(CatalogError::CredentialHeader(header, reason));
        }
        if !is_header_value(&value) || value.len() > MAX_CREDENTIAL_BYTES {
            value.zeroize();
            return Err(CatalogError::CredentialValue);
        }
        Ok(Self { header, value })
    }

    /// `authorization: Bearer TOKEN`.
    pub fn bearer(token: &str) -> Result<Self, CatalogError> {
        let mut value = Vec::with_capacity(7 + token.len());
        value.extend_from_slice(b"Bearer ");
        value.extend_from_slice(token.as_bytes());
        Self::header("authorization", value)
    }

    /// The header name (lowercase).
    pub fn header_name(&self) -> &str {
        &self.header
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.value
    }
}

pub(crate) fn is_header_name_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Printable ASCII, non-empty, no leading or trailing space.
pub(crate) fn is_header_value(value: &[u8]) -> bool {
    !value.is_empty()
        && value.iter().all(|b| (0x20..=0x7e).contains(b))
        && value.first() != Some(&b' ')
        && value.last() != Some(&b' ')
}

/// What an entry lets a worker ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Exactly this method and path.
    Endpoint { method: Method, path: String },
    /// Any valid path with one of these methods.
    Origin { methods: BTreeSet<Method> },
}

/// One reviewed catalog entry.
#[derive(Debug)]
pub struct Entry {
    pub(crate) id: Token,
    pub(crate) origin: Origin,
    pub(crate) rule: Rule,
    pub(crate) limits: Limits,
    pub(crate) redirects: Redirects,
    pub(crate) credential: Option<Credential>,
}

fn token(id: &str) -> Result<Token, CatalogError> {
    Token::new(id).map_err(|reason| CatalogError::Id {
        id: id.to_owned(),
        reason,
    })
}

impl Entry {
    /// An endpoint: `method` on the fixed `url` (`http://HOST[:PORT]/PATH`,
    /// the path may carry a query), with default limits, no redirects and no
    /// credential.
    pub fn endpoint(id: &str, method: Method, url: &str) -> Result<Self, CatalogError> {
        let id = token(id)?;
        let (origin, path) = split_url(url)?;
        let path = if path.is_empty() { "/" } else { path };
        check_path(path).map_err(|reason| CatalogError::Path {
            path: path.to_owned(),
            reason,
        })?;
        Ok(Self {
            id,
            origin,
            rule: Rule::Endpoint {
                method,
                path: path.to_owned(),
            },
            limits: Limits::default(),
            redirects: Redirects::Refuse,
            credential: None,
        })
    }

    /// An exact origin (`http://HOST[:PORT]`): any valid path with one of
    /// `methods`, default limits, no redirects and no credential.
    pub fn origin(id: &str, origin: &str, methods: &[Method]) -> Result<Self, CatalogError> {
        let id = token(id)?;
        let origin = Origin::parse(origin)?;
        if methods.is_empty() {
            return Err(CatalogError::NoMethods(id.clone()));
        }
        Ok(Self {
            id,
            origin,
            rule: Rule::Origin {
                methods: methods.iter().copied().collect(),
            },
            limits: Limits::default(),
            redirects: Redirects::Refuse,
            credential: None,
        })
    }

    /// Replaces the limits (each bound within its ceiling).
    pub fn with_limits(mut self, limits: Limits) -> Result<Self, CatalogError> {
        limits.check()?;
        self.limits = limits;
        Ok(self)
    }

    /// Replaces the redirect policy.
    pub fn with_redirects(mut self, redirects: Redirects) -> Result<Self, CatalogError> {
        if let Redirects::SameOrigin { max_hops } = redirects
            && !(1..=MAX_REDIRECT_HOPS).contains(&max_hops)
        {
            return Err(CatalogError::Bound {
                what: "redirect hops",
                value: u128::from(max_hops),
                max: u128::from(MAX_REDIRECT_HOPS),
            });
        }
        self.redirects = redirects;
        Ok(self)
    }

    /// Attaches a host-held credential, sent on every request of this entry
    /// (and on a followed same-origin redirect).
    pub fn with_credential(mut self, credential: Credential) -> Self {
        self.credential = Some(credential);
        self
    }

    /// The entry's id.
    pub fn id(&self) -> &Token {
        &self.id
    }

    /// The entry's kind.
    pub fn kind(&self) -> CatalogKind {
        match self.rule {
            Rule::Endpoint { .. } => CatalogKind::Endpoint,
            Rule::Origin { .. } => CatalogKind::Origin,
        }
    }
}

/// A reviewed catalog of one kind: at most [`MAX_CATALOG_ENTRIES`] entries
/// with distinct ids.
#[derive(Debug)]
pub struct Catalog {
    kind: CatalogKind,
    entries: BTreeMap<Token, Entry>,
}

impl Catalog {
    /// An empty catalog of `kind`.
    pub fn new(kind: CatalogKind) -> Self {
        Self {
            kind,
            entries: BTreeMap::new(),
        }
    }

    /// Adds an entry of the catalog's kind with a new id.
    pub fn insert(&mut self, entry: Entry) -> Result<(), CatalogError> {
        if entry.kind() != self.kind {
            return Err(CatalogError::KindMismatch {
                id: entry.id.clone(),
                expected: self.kind,
                found: entry.kind(),
            });
        }
        if self.entries.contains_key(&entry.id) {
            return Err(CatalogError::Duplicate(entry.id.clone()));
        }
        if self.entries.len() == MAX_CATALOG_ENTRIES {
            return Err(CatalogError::TooManyEntries);
        }
        self.entries.insert(entry.id.clone(), entry);
        Ok(())
    }

    /// Adds an entry (builder form).
    pub fn with(mut self, entry: Entry) -> Result<Self, CatalogError> {
        self.insert(entry)?;
        Ok(self)
    }

    /// The catalog's kind.
    pub fn kind(&self) -> CatalogKind {
        self.kind
    }

    /// The ids, in order.
    pub fn ids(&self) -> BTreeSet<Token> {
        self.entries.keys().cloned().collect()
    }

    /// Checks that the ids equal the distinct `network_origin` ids of
    /// `manifest` (over all grants), no more and no less.
    pub fn check_manifest(&self, manifest: &CapabilityManifest) -> Result<(), CatalogError> {
        let wanted = manifest.active_ids(ResourceKind::NetworkOrigin);
        let have = self.ids();
        if wanted == have {
            return Ok(());
        }
        Err(CatalogError::ManifestMismatch {
            only_catalog: have.difference(&wanted).cloned().collect(),
            only_manifest: wanted.difference(&have).cloned().collect(),
        })
    }

    pub(crate) fn get(&self, id: &Token) -> Option<&Entry> {
        self.entries.get(id)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_strictly() {
        let o = Origin::parse("http://127.0.0.1:8080").expect("origin");
        assert_eq!((o.host(), o.port()), ("127.0.0.1", 8080));
        assert_eq!(o.authority(), "127.0.0.1:8080");
        let o = Origin::parse("http://api.example/").expect("origin");
        assert_eq!(
            (o.host(), o.port(), o.authority()),
            ("api.example", 80, "api.example".into())
        );
        let o = Origin::parse("http://[::1]:81").expect("v6");
        assert_eq!(o.connect_host(), "::1");
        assert!(matches!(
            Origin::parse("https://api.example"),
            Err(CatalogError::TlsUnsupported { .. })
        ));
        for bad in [
            "ftp://x",
            "http://",
            "http://user@x",
            "http://X.example",
            "http://x:0",
            "http://x:99999",
            "http://x:8a",
            "http://x/path",
            "http://x?q",
            "http://.x",
            "http://[zz]",
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn endpoints_fix_method_and_path() {
        let e = Entry::endpoint("api.status", Method::Get, "http://127.0.0.1:9/status?x=1")
            .expect("endpoint");
        assert_eq!(
            e.rule,
            Rule::Endpoint {
                method: Method::Get,
                path: "/status?x=1".into()
            }
        );
        assert!(Entry::endpoint("Bad", Method::Get, "http://x/").is_err());
        assert!(Entry::endpoint("a", Method::Get, "http://x//evil").is_err());
        assert!(Entry::endpoint("a", Method::Get, "http://x/a b").is_err());
        assert!(Entry::endpoint("a", Method::Get, "http://x/a#f").is_err());
        assert!(Entry::origin("a", "http://x", &[]).is_err());
    }

    #[test]
    fn limits_and_redirects_are_bounded() {
        let e = || Entry::endpoint("a", Method::Get, "http://x/").expect("entry");
        let zero = Limits {
            max_request_bytes: 0,
            ..Limits::default()
        };
        assert!(e().with_limits(zero).is_err());
        let huge = Limits {
            max_response_bytes: MAX_BODY_BYTES + 1,
            ..Limits::default()
        };
        assert!(e().with_limits(huge).is_err());
        let slow = Limits {
            timeout: Duration::from_secs(61),
            ..Limits::default()
        };
        assert!(e().with_limits(slow).is_err());
        assert!(
            e().with_redirects(Redirects::SameOrigin { max_hops: 0 })
                .is_err()
        );
        assert!(
            e().with_redirects(Redirects::SameOrigin { max_hops: 6 })
                .is_err()
        );
        assert!(
            e().with_redirects(Redirects::SameOrigin { max_hops: 2 })
                .is_ok()
        );
    }

    #[test]
    fn credentials_are_checked_and_never_printed() {
        let c = Credential::bearer("s3cret-value").expect("bearer");
        assert_eq!(c.header_name(), "authorization");
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(Credential::header("host", "x").is_err());
        assert!(Credential::header("accept", "x").is_err());
        assert!(Credential::header("transfer-encoding", "x").is_err());
        assert!(Credential::header("x key", "x").is_err());
        assert!(Credential::header("x-key", "a\r\nb").is_err());
        assert!(Credential::header("x-key", "").is_err());
        assert!(Credential::header("x-key", vec![b'a'; MAX_CREDENTIAL_BYTES + 1]).is_err());
        assert!(Credential::header("X-Key", "v").is_ok());
    }

    #[test]
    fn catalogs_hold_one_kind_and_distinct_ids() {
        let mut c = Catalog::new(CatalogKind::Endpoint);
        c.insert(Entry::endpoint("a", Method::Get, "http://x/").expect("a"))
            .expect("insert");
        assert_eq!(
            c.insert(Entry::endpoint("a", Method::Post, "http://x/").expect("a")),
            Err(CatalogError::Duplicate(Token::new("a").expect("token")))
        );
        assert!(matches!(
            c.insert(Entry::origin("b", "http://x", &[Method::Get]).expect("b")),
            Err(CatalogError::KindMismatch { .. })
        ));
        assert_eq!(c.ids().len(), 1);
    }

    /// Catalog ids are tokens like every other id: 1 to 128 bytes of
    /// `a-z`, `0-9`, `.`, `_` and `-`, checked when the entry is built.
    #[test]
    fn entry_ids_follow_the_token_rule() {
        let longest = "i".repeat(splash_protocol::token::MAX_TOKEN_LEN);
        assert!(Entry::endpoint(&longest, Method::Get, "http://x/").is_ok());
        assert!(Entry::origin(&longest, "http://x", &[Method::Get]).is_ok());
        let too_long = format!("{longest}i");
        for (id, reason) in [
            (too_long.as_str(), TokenError::TooLong(129)),
            ("", TokenError::Empty),
            (
                "Api",
                TokenError::InvalidByte {
                    offset: 0,
                    byte: b'A',
                },
            ),
            (
                "a/b",
                TokenError::InvalidByte {
                    offset: 1,
                    byte: b'/',
                },
            ),
        ] {
            let want = Err(CatalogError::Id {
                id: id.to_owned(),
                reason,
            });
            assert_eq!(
                Entry::endpoint(id, Method::Get, "http://x/").map(|_| ()),
                want
            );
            assert_eq!(
                Entry::origin(id, "http://x", &[Method::Get]).map(|_| ()),
                want
            );
        }
    }
}
