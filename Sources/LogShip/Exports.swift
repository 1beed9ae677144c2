// The record types are part of LogShip's interface: whoever imports LogShip works with them.
@_exported import LogShipRecord
