//! One free loopback TCP port per replica slot, for [`trainctl_engine::Addressing::Loopback`].
//!
//! Each port is found by binding `127.0.0.1:0`; the listener is held so that no other reservation
//! in this process gets the same port. The runtime releases the listeners just before it spawns
//! the replicas, which then bind the ports themselves. Between release and bind another program on
//! the machine could take a port; the window is small and a replica that fails to bind fails like
//! any other, under the job's restart policy.

use std::collections::BTreeMap;
use std::io;
use std::net::{Ipv4Addr, TcpListener};

use trainctl_api::ReplicaType;

/// Ports held for a job's replica slots until [`PortReservation::release`].
#[derive(Debug)]
pub struct PortReservation {
    ports: BTreeMap<(ReplicaType, i32), u16>,
    listeners: Vec<TcpListener>,
}

impl PortReservation {
    /// Reserves a distinct free loopback port for each slot (a slot named twice gets one port).
    pub fn reserve(slots: impl IntoIterator<Item = (ReplicaType, i32)>) -> io::Result<Self> {
        let mut reservation = PortReservation {
            ports: BTreeMap::new(),
            listeners: Vec::new(),
        };
        for slot in slots {
            if reservation.ports.contains_key(&slot) {
                continue;
            }
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
            let port = listener.local_addr()?.port();
            reservation.ports.insert(slot, port);
            reservation.listeners.push(listener);
        }
        Ok(reservation)
    }

    /// The port of each slot, while still held.
    #[must_use]
    pub fn ports(&self) -> &BTreeMap<(ReplicaType, i32), u16> {
        &self.ports
    }

    /// Closes the listeners so the replicas can bind their ports; returns the ports for
    /// `Addressing::Loopback`.
    #[must_use]
    pub fn release(self) -> BTreeMap<(ReplicaType, i32), u16> {
        drop(self.listeners);
        self.ports
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn slots() -> Vec<(ReplicaType, i32)> {
        vec![
            (ReplicaType::Master, 0),
            (ReplicaType::Worker, 0),
            (ReplicaType::Worker, 1),
            (ReplicaType::Worker, 2),
        ]
    }

    #[test]
    fn every_slot_gets_a_distinct_port() {
        let reservation = PortReservation::reserve(slots()).expect("loopback is bindable");
        let ports = reservation.ports();
        assert_eq!(ports.len(), 4);
        let distinct: BTreeSet<u16> = ports.values().copied().collect();
        assert_eq!(distinct.len(), 4);
        assert!(!distinct.contains(&0));
    }

    #[test]
    fn slot_named_twice_gets_one_port() {
        let reservation =
            PortReservation::reserve([(ReplicaType::Worker, 0), (ReplicaType::Worker, 0)])
                .expect("loopback is bindable");
        assert_eq!(reservation.ports().len(), 1);
    }

    #[test]
    fn held_ports_cannot_be_bound_by_others() {
        let reservation = PortReservation::reserve(slots()).expect("loopback is bindable");
        for port in reservation.ports().values() {
            assert!(
                TcpListener::bind((Ipv4Addr::LOCALHOST, *port)).is_err(),
                "{port} is not held"
            );
        }
    }

    #[test]
    fn released_ports_are_bindable() {
        let ports = PortReservation::reserve(slots())
            .expect("loopback is bindable")
            .release();
        let listeners: Vec<TcpListener> = ports
            .values()
            .map(|port| {
                TcpListener::bind((Ipv4Addr::LOCALHOST, *port)).expect("released port binds")
            })
            .collect();
        assert_eq!(listeners.len(), ports.len());
    }
}
