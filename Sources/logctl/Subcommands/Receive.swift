import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import LogShipClient
import NIOSSL

/// `logctl receive`: a small HTTP receiver that prints each record logshipd uploads, once: a record whose id it
/// received before (a repeat after a timeout or a restart) is dropped with a line that counts it.
struct Receive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Listen for logshipd's uploads and print each record on one line.")

    @Option(name: .long, help: "HOST:PORT to listen on.")
    var listen = "127.0.0.1:8514"

    @Option(name: .customLong("delay-ms"), help: "Wait this long before answering each request.")
    var delayMilliseconds = 0

    @Option(name: .customLong("fail-rate"), help: "Share of requests (0-1) to answer with --fail-status.")
    var failRate = 0.0

    @Option(name: .customLong("fail-status"), help: "Status for failed requests.")
    var failStatus = 503

    @Option(name: .customLong("retry-after"), help: "Send Retry-After: SECONDS with failed requests.")
    var retryAfter: Int?

    @Flag(name: .long, help: "Print only a count per request, not the records.")
    var quiet = false

    @Flag(
        name: .customLong("keep-duplicates"),
        help: "Print records whose id was received before, marked [duplicate], instead of dropping them.")
    var keepDuplicates = false

    @Flag(
        name: .long,
        help: "Print each request as a JSON object on one line: its records with their ids, and its duplicates.")
    var json = false

    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS with this PEM certificate (chain); needs --tls-key.")
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: "The PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(name: .customLong("client-ca"), help: "Require client certificates issued by this PEM CA (mutual TLS).")
    var clientCA: String?

    func validate() throws {
        guard ListenAddress(listen) != nil else { throw ValidationError("--listen \"\(listen)\" is not HOST:PORT") }
        guard delayMilliseconds >= 0 else { throw ValidationError("--delay-ms must not be negative") }
        guard (0...1).contains(failRate) else { throw ValidationError("--fail-rate must be between 0 and 1") }
        guard (100...599).contains(failStatus) else { throw ValidationError("--fail-status must be an HTTP status") }
        if let retryAfter, retryAfter < 0 { throw ValidationError("--retry-after must not be negative") }
        guard (tlsCertificate == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        if clientCA != nil && tlsCertificate == nil {
            throw ValidationError("--client-ca needs --tls-cert and --tls-key")
        }
    }

    func run() async throws {
        let address = ListenAddress(listen)!
        let printer = RecordPrinter(
            colored: !json && isatty(STDOUT_FILENO) == 1, quiet: quiet, deduplicator: RecordDeduplicator(),
            keepsDuplicates: keepDuplicates, json: json)
        let tls = try tlsCertificate.map { certificate in
            try LogReceiver.serverTLS(certificateFile: certificate, keyFile: tlsKey!, clientCAFile: clientCA)
        }
        let receiver = try await LogReceiver(
            host: address.host,
            port: address.port,
            tls: tls,
            behavior: .init(
                delay: .milliseconds(delayMilliseconds), failureRate: failRate, failureStatus: failStatus,
                retryAfter: retryAfter),
            onRequest: { request in printer.print(request) })
        UnbufferedOutput.write("logctl receive: listening on \(receiver.url)\n", to: STDERR_FILENO)
        try await receiver.run()
    }
}
