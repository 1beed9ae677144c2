/// How delivery ends its claim on a batch (``Spool/settle(_:_:)``).
public enum Settlement: Hashable, Sendable {
    /// The remote took the records: they are deleted, in a commit the spool makes in the background, so that the
    /// request's slot is free again as soon as the remote has answered.
    ///
    /// Until the delete is committed the records stay claimed, invisible to claims, and ``Spool/close()`` waits
    /// for it. Should it fail, the records are pending again (they are sent again, never lost), the spool logs it,
    /// and claims find nothing ready for a few seconds.
    case delivered
    /// Not delivered this time: the claim is given back (unclaimed), the records pending again at their place in
    /// their class, ready at once. Nothing is written: claims live only as long as the process. When they go
    /// again is the shipper's to decide.
    case putBack
    /// The remote will never accept the records: they move to the dead letters with the reason
    /// (``DeadLetterStore``), committed before ``Spool/settle(_:_:)`` returns.
    case deadLetter(DeliveryFailure)
}
