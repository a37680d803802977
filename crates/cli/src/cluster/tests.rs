//! Cluster mode against a mock API server.
