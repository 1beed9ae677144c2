import Configuration
import Foundation
import Yams

/// `upload.url`: one URL, or a list of endpoints in order of preference, each a URL or a mapping with its own
/// `auth` and `tls` sections.
extension ConfigurationLoader {
    /// One entry of `upload.url` as the file writes it: a URL, and the texts of its own `auth.*` and `tls.*` keys
    /// when it names those sections.
    struct EndpointEntry {
        var url: String?
        var auth: [String: String]?
        var tls: [String: String]?
    }

    /// The keys an entry's own sections may hold: the top-level sections' keys.
    static let endpointSectionKeys: [String: Set<String>] = Dictionary(
        uniqueKeysWithValues: ["auth", "tls"].map { section in
            let prefix = section + "."
            return (section, Set(knownKeys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }))
        })

    /// The entries of `upload.url` written as a list, with the problems of their shape (unknown keys, a mapping
    /// without `url`), each naming its entry.
    static func readEndpointEntries(_ sequence: Node.Sequence, path: String) -> ([EndpointEntry], [String]) {
        var entries: [EndpointEntry] = []
        var problems: [String] = []
        for (index, item) in sequence.enumerated() {
            let name = "\(path): \(entryName(index, of: sequence.count))"
            if let url = item.scalar?.string {
                entries.append(EndpointEntry(url: url))
                continue
            }
            guard let mapping = item.mapping else {
                problems.append("\(name) must be a URL, or a mapping with url and its own auth and tls")
                continue
            }
            var entry = EndpointEntry()
            for (keyNode, value) in mapping {
                let key = keyNode.string ?? "\(keyNode)"
                if key == "url", let url = value.scalar?.string {
                    entry.url = url
                } else if let known = endpointSectionKeys[key], let section = value.mapping ?? emptySection(value) {
                    var texts: [String: String] = [:]
                    for (innerKey, innerValue) in section {
                        let inner = innerKey.string ?? "\(innerKey)"
                        guard known.contains(inner) else {
                            problems.append("\(name): unknown key \(key).\(inner)")
                            continue
                        }
                        guard let text = innerValue.scalar?.string else {
                            problems.append("\(name): \(key).\(inner) must be a single value")
                            continue
                        }
                        texts[inner] = text
                    }
                    if key == "auth" { entry.auth = texts } else { entry.tls = texts }
                } else if key == "url" || endpointSectionKeys[key] != nil {
                    problems.append("\(name): \(key) must be \(key == "url" ? "a single value" : "a mapping of keys")")
                } else {
                    problems.append("\(name): unknown key \(key) (an entry holds url, auth and tls)")
                }
            }
            if entry.url == nil { problems.append("\(name) has no url") }
            entries.append(entry)
        }
        if sequence.isEmpty { problems.append("\(path): upload.url is an empty list") }
        return (entries, problems)
    }

    /// An empty mapping for a section written with no value (`auth:` or `auth: ~`), as a top-level section may be.
    private static func emptySection(_ node: Node) -> Node.Mapping? {
        isNoValue(node) ? Node.Mapping([]) : nil
    }

    /// How problems name an entry of a list of `count`: `upload.url entry 2`, or `upload.url` when it is alone.
    static func entryName(_ index: Int, of count: Int) -> String {
        count == 1 ? "upload.url" : "upload.url entry \(index + 1)"
    }

    /// Reads `upload.url`: the environment's or the file's text (one URL, or several separated by spaces), else
    /// the file's list; each URL must be one uploads can go to.
    static func readEndpoints(
        _ values: inout ConfigValues, file entries: [EndpointEntry]?
    ) -> [DaemonConfiguration.Endpoint] {
        if let text = values.reader.string(forKey: ConfigKey("upload.url")) {
            // `a,b` would read as one URL whose path holds the second, and `a, b` as a URL whose path ends in a comma.
            if text.range(of: #",\s*https?://"#, options: [.regularExpression, .caseInsensitive]) != nil {
                values.problems.append(
                    "\(values.source(of: "upload.url")): several URLs are separated by spaces, not commas "
                        + "(not shown: it may hold a credential)")
                return [DaemonConfiguration.Endpoint(url: "")]
            }
            let urls = text.split(whereSeparator: { $0.isWhitespace }).map(String.init)
            guard urls.count > 1 else {
                var url = ""
                values.read("upload.url", into: &url, .httpURL)
                return [DaemonConfiguration.Endpoint(url: url)]
            }
            let source = values.source(of: "upload.url")
            return urls.enumerated().map { index, url in
                var checked = url
                values.parse(
                    url, .httpURL, into: &checked, named: "\(source) entry \(index + 1)", mayHoldCredentials: true)
                return DaemonConfiguration.Endpoint(url: checked)
            }
        }
        guard let entries else {
            values.problems.append(
                "upload.url is not set: logshipd needs to know where to send records "
                    + "(set it in the file, or LOGSHIPD_UPLOAD_URL)")
            return []
        }
        return entries.enumerated().map { index, entry in
            let name = entryName(index, of: entries.count)
            var endpoint = DaemonConfiguration.Endpoint(url: entry.url ?? "")
            values.parse(entry.url, .httpURL, into: &endpoint.url, named: name, mayHoldCredentials: true)
            if let texts = entry.auth {
                var auth = DaemonConfiguration.Auth()
                auth.bearerTokenFile = texts["bearer_token_file"] ?? ""
                auth.basicUser = texts["basic_user"] ?? ""
                auth.basicPasswordFile = texts["basic_password_file"] ?? ""
                endpoint.auth = auth
            }
            if let texts = entry.tls {
                var tls = DaemonConfiguration.TLS()
                tls.caFile = texts["ca_file"] ?? ""
                tls.clientCert = texts["client_cert"] ?? ""
                tls.clientKey = texts["client_key"] ?? ""
                tls.serverName = texts["server_name"] ?? ""
                values.parse(
                    texts["min_version"], ValueParser<String>.oneOf(["1.2", "1.3"]), into: &tls.minVersion,
                    named: "\(name): tls.min_version")
                values.parse(
                    texts["insecure_skip_verify"], ValueParser<Bool>.boolean, into: &tls.insecureSkipVerify,
                    named: "\(name): tls.insecure_skip_verify")
                endpoint.tls = tls
            }
            return endpoint
        }
    }

    /// What an operator should know of valid endpoints: credentials that reach more than one receiver. A plain URL
    /// entry sends the top-level `auth`, so adding a second URL to a file with a token sends that token to the new
    /// receiver too, which may be meant (two hosts of one service) or not.
    static func endpointNotices(_ configuration: DaemonConfiguration) -> [String] {
        let endpoints = configuration.upload.endpoints
        guard endpoints.count > 1 else { return [] }
        var notices: [String] = []
        func named(_ indices: [Int]) -> String {
            indices.map { "\($0 + 1) (\(endpoints[$0].shownName))" }.joined(separator: ", ")
        }
        let inheriting = endpoints.indices.filter { endpoints[$0].auth == nil }
        if configuration.auth.sendsCredentials && inheriting.count > 1 {
            notices.append(
                "upload.url entries \(named(inheriting)) are all sent the top-level auth credentials: if a receiver "
                    + "should not have them, give its entry an auth section of its own (auth: {} sends none)")
        }
        // An endpoint's credentials replace the header; one without any sends it as it is.
        let bare = endpoints.indices.filter { !configuration.auth(of: endpoints[$0]).sendsCredentials }
        let authorization = configuration.upload.headers.contains {
            $0.0.caseInsensitiveCompare("Authorization") == .orderedSame
        }
        if authorization && bare.count > 1 {
            notices.append(
                "upload.headers' Authorization header is sent to upload.url entries \(named(bare)), which have no "
                    + "auth credentials to replace it: if a receiver should not have it, give its entry an auth "
                    + "section with credentials of its own")
        }
        return notices
    }

    /// What is wrong with the endpoints beyond each URL: a URL listed twice, or two that differ only where they are
    /// not shown, a user or password in a URL, and the rules of each endpoint's own `auth` and `tls`.
    static func endpointProblems(_ endpoints: [DaemonConfiguration.Endpoint]) -> [String] {
        var problems: [String] = []
        var seen: Set<String> = []
        var shown: Set<String> = []
        for (index, endpoint) in endpoints.enumerated() {
            let name = entryName(index, of: endpoints.count)
            if !seen.insert(endpoint.url).inserted {
                problems.append("\(name) repeats an earlier entry's URL: each endpoint is listed once")
            } else if !shown.insert(endpoint.shownName).inserted {
                // An endpoint is known by its shown name (status, metrics labels, what a reload keeps); two that
                // differ only in a query or fragment are one receiver, which failing over to would not help.
                problems.append(
                    "\(name) differs from an earlier entry (\(endpoint.shownName)) only in its query or fragment "
                        + "(not shown: they may hold a credential): each receiver is listed once")
            }
            // A password in the URL would be in every log line and status that names the URL; it is not shown.
            if let url = URLComponents(string: endpoint.url), url.user != nil || url.password != nil {
                problems.append(
                    "\(name) holds a user or password (not shown): put the user in auth.basic_user and the "
                        + "password in a file named by auth.basic_password_file")
            }
            if let auth = endpoint.auth { problems += authProblems(auth).map { "\(name): \($0)" } }
            if let tls = endpoint.tls { problems += tlsProblems(tls).map { "\(name): \($0)" } }
        }
        return problems
    }
}
