// The record types and the client's are part of LogShip's interface: whoever imports LogShip works with them.
@_exported import LogShipClient
@_exported import LogShipRecord
