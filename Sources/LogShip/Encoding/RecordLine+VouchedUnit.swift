import LogShipRecord

extension RecordLine {
    /// The unit journald vouches for: the `systemd_unit` field of a journal record, read from `_SYSTEMD_UNIT`.
    ///
    /// On a record from a socket `systemd_unit` is only the sender's word, an ordinary field that no format may
    /// show as the record's unit (OTLP `systemd.unit` or `service.name`, journal `_SYSTEMD_UNIT`, Loki `unit`).
    var vouchedUnit: EscapedString? {
        source == .journal ? fields["systemd_unit"] : nil
    }

    /// The fields a format writes as fields, in key order: all of them but the vouched unit, which each format
    /// writes under its own name for the unit.
    var fieldsBesideVouchedUnit: LazyFilterSequence<Fields> {
        let besideUnit = vouchedUnit != nil
        return fields.lazy.filter { !besideUnit || !$0.key.equals("systemd_unit") }
    }
}
