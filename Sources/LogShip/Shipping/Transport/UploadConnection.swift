import NIOCore

/// An upload connection and the handler at the end of its pipeline, found once when it connected.
struct UploadConnection: Sendable {
    var channel: any Channel
    var handler: NIOLoopBound<UploadConnectionHandler>
}
