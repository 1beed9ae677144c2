// The record types are part of this module's interface: the control messages and the receiver speak of them.
@_exported import LogShipRecord
