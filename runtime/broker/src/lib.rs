//! A host-owned HTTP broker for one reviewed catalog, served over one
//! private Unix socket, and the worker's client for it.
//!
//! A worker launched with `--unshare-all` has no network stack. When its
//! policy has a `network-broker` statement, the host starts one
//! [`HostBroker`] for the session around a reviewed [`Catalog`]; the
//! runtime's bind pins the broker's private directory
//! ([`HostBroker::mount`], `BindOptions::with_network_broker`) and
//! Bubblewrap mounts it read-only at the policy's destination. The worker
//! then makes exactly the HTTP requests the catalog allows, one per
//! connection, through [`BrokerClient`], which checks the worker's grant
//! first; the broker re-checks every id against its catalog.
//!
//! Modules: [`catalog`] (what is allowed), [`wire`] (the JSON-line format),
//! [`http`] (the bounded HTTP/1.1 client), [`host`] (directory, socket,
//! serving thread), [`client`] (the worker side). See `docs/broker.md`.

#![warn(missing_docs)]

pub mod catalog;
pub mod client;
pub mod host;
pub mod http;
mod sys;
pub mod wire;

pub use catalog::{
    Catalog, CatalogError, CatalogKind, Credential, Entry, HeaderDefect, Limits, Method,
    PathDefect, Redirects, UrlDefect,
};
pub use client::{BrokerClient, ClientError};
pub use host::{
    BrokerError, BrokerMount, BrokerStats, HostBroker, ParentDefect, ShapeDefect, ThreadEnd,
};
pub use wire::{Failure, Headers, Reply, Request, Response, SOCKET_NAME};
