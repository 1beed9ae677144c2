/// Reads an `ExportLogsServiceRequest` in protobuf (`upload.format: otlp`), the fields the JSON decoding reads, by
/// the field numbers of OpenTelemetry's `logs.proto`; others are skipped.
extension OTLPLogsRequest {
    init(protobuf bytes: ArraySlice<UInt8>) throws {
        var resourceLogs: [ResourceLogs] = []
        try Self.forEachMessage(1, in: bytes) { resourceLogs.append(try ResourceLogs(protobuf: $0)) }
        self.init(resourceLogs: resourceLogs)
    }

    /// Calls `body` with the bytes of every length-delimited field `number` of a message.
    static func forEachMessage(
        _ number: UInt64, in message: ArraySlice<UInt8>, _ body: (ArraySlice<UInt8>) throws -> Void
    ) throws {
        var reader = ProtobufReader(message)
        while let (field, value) = try reader.next() {
            if field == number, case .bytes(let bytes) = value { try body(bytes) }
        }
    }
}

extension OTLPLogsRequest.ResourceLogs {
    init(protobuf bytes: ArraySlice<UInt8>) throws {
        var attributes: [OTLPLogsRequest.KeyValue] = []
        var scopeLogs: [ScopeLogs] = []
        // resource = 1 (its attributes = 1), scope_logs = 2 (their log_records = 2).
        try OTLPLogsRequest.forEachMessage(1, in: bytes) { resource in
            try OTLPLogsRequest.forEachMessage(1, in: resource) {
                attributes.append(try OTLPLogsRequest.KeyValue(protobuf: $0))
            }
        }
        try OTLPLogsRequest.forEachMessage(2, in: bytes) { scope in
            var records: [OTLPLogsRequest.Record] = []
            try OTLPLogsRequest.forEachMessage(2, in: scope) {
                records.append(try OTLPLogsRequest.Record(protobuf: $0))
            }
            scopeLogs.append(ScopeLogs(logRecords: records))
        }
        self.init(resource: Resource(attributes: attributes), scopeLogs: scopeLogs)
    }
}

extension OTLPLogsRequest.Record {
    init(protobuf bytes: ArraySlice<UInt8>) throws {
        self.init()
        var attributes: [OTLPLogsRequest.KeyValue] = []
        var reader = ProtobufReader(bytes)
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (1, .fixed64(let nanoseconds)): timeUnixNano = String(nanoseconds)
            case (2, .varint(let number)): severityNumber = Int(truncatingIfNeeded: number)
            case (5, .bytes(let body)): self.body = try OTLPLogsRequest.AnyValue(protobuf: body)
            case (6, .bytes(let attribute)): attributes.append(try OTLPLogsRequest.KeyValue(protobuf: attribute))
            default: break
            }
        }
        self.attributes = attributes
    }
}

extension OTLPLogsRequest.KeyValue {
    init(protobuf bytes: ArraySlice<UInt8>) throws {
        var key = ""
        var value = OTLPLogsRequest.AnyValue()
        var reader = ProtobufReader(bytes)
        while let (field, part) = try reader.next() {
            switch (field, part) {
            case (1, .bytes(let text)): key = String(decoding: text, as: UTF8.self)
            case (2, .bytes(let any)): value = try OTLPLogsRequest.AnyValue(protobuf: any)
            default: break
            }
        }
        self.init(key: key, value: value)
    }
}

extension OTLPLogsRequest.AnyValue {
    init(protobuf bytes: ArraySlice<UInt8>) throws {
        self.init()
        var reader = ProtobufReader(bytes)
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (1, .bytes(let text)): stringValue = String(decoding: text, as: UTF8.self)
            case (2, .varint(let flag)): boolValue = flag != 0
            case (3, .varint(let integer)): intValue = String(Int64(bitPattern: integer))
            default: break
            }
        }
    }
}
