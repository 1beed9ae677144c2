import NIOHTTP1

/// What an Elasticsearch node answers to the requests rsyslog's omelasticsearch makes, and how many documents a
/// request delivered: as little of the API as lets rsyslog take every document as indexed.
///
/// omelasticsearch asks `GET /` for the node's version and `GET /_cat/health` before it tries a node again, posts
/// batches to `POST /_bulk` (for each document an action line, then the document) and single documents to
/// `POST /INDEX/_doc`. It reads a bulk answer's `items`, one per document in the request's order.
struct ElasticsearchAnswer {
    var status: HTTPResponseStatus
    var contentType = "application/json"
    var body: String
    /// The documents the request delivered: none but for an indexing request.
    var documents = 0

    /// - Parameter bodyLines: The lines of the request's body.
    init(method: HTTPMethod, uri: String, bodyLines: Int) {
        let path = uri.prefix { $0 != "?" }
        switch method {
        case .GET where path == "/":
            status = .ok
            body = #"{"version":{"number":"7.17.0"}}"#
        case .GET where path == "/_cat/health":
            status = .ok
            contentType = "text/plain"
            body = "1795255200 10:00:00 bench green 1 1 0 0 0 0 0 0 - 100.0%\n"
        case .POST where path == "/_bulk":
            status = .ok
            documents = bodyLines / 2
            let items = repeatElement(#"{"index":{"status":201}}"#, count: documents).joined(separator: ",")
            body = #"{"took":1,"errors":false,"items":["# + items + "]}"
        case .POST where path.hasSuffix("/_doc"):
            status = .created
            documents = 1
            body = #"{"result":"created"}"#
        default:
            // Nothing omelasticsearch sends: its run then stalls, and the wait for its documents says how far it got.
            status = .notFound
            body = #"{"error":"not in logshipd-bench's receiver"}"#
        }
    }
}
