import Foundation
import Testing

import LogShipTestKit
@testable import LogShip

/// `upload.url` as a list of endpoints in order of preference, each with its own credentials and TLS if it says so.
extension ConfigurationLoaderTests {
    static let endpointList = """
        upload:
          url:
            - https://logs-a.example/ingest
            - url: https://10.0.0.2/ingest
              auth:
                basic_user: shipper
                basic_password_file: /run/credentials/logshipd.service/b-password
              tls:
                server_name: logs-b.internal
                min_version: "1.3"
        auth:
          bearer_token_file: /run/credentials/logshipd.service/a-token
        """

    @Test("upload.url as a list: endpoints in order, an entry's own auth and tls replace the top-level sections for it")
    func endpointList() async throws {
        let configuration = try await load(Self.endpointList)
        let endpoints = configuration.upload.endpoints
        #expect(endpoints.map(\.url) == ["https://logs-a.example/ingest", "https://10.0.0.2/ingest"])
        #expect(configuration.upload.url == "https://logs-a.example/ingest", "the preferred one")
        #expect(configuration.auth(of: endpoints[0]).bearerTokenFile.hasSuffix("a-token"))
        #expect(configuration.auth(of: endpoints[1]).bearerTokenFile.isEmpty, "its own auth names no token")
        #expect(configuration.auth(of: endpoints[1]).basicUser == "shipper")
        #expect(configuration.tls(of: endpoints[0]).serverName.isEmpty)
        #expect(configuration.tls(of: endpoints[1]).minVersion == "1.3")

        let uploads = try LiveConfiguration.uploadConfigurations(configuration)
        #expect(uploads.map(\.url) == ["https://logs-a.example/ingest", "https://logs-b.internal/ingest"])
        #expect(uploads[0].bearerTokenFile?.hasSuffix("a-token") == true && uploads[0].basicAuthentication == nil)
        #expect(uploads[1].bearerTokenFile == nil && uploads[1].basicAuthentication?.user == "shipper")
        #expect(uploads[1].connectHost == "10.0.0.2" && uploads[1].tls?.minimumTLSVersion == .tlsv13)
        #expect(LiveConfiguration.shipperSettings(configuration).endpoints == endpoints.map(\.url))
    }

    @Test("a single upload.url reads as before; the environment's URLs, separated by spaces, replace the file's list")
    func endpointSources() async throws {
        let single = try await load("upload:\n  url: http://127.0.0.1:9/ingest\n")
        #expect(single.upload.endpoints.map(\.url) == ["http://127.0.0.1:9/ingest"])
        #expect(single.upload.endpoints[0].auth == nil && single.upload.endpoints[0].tls == nil)

        let urls = "http://127.0.0.1:1/ingest  http://127.0.0.1:2/ingest"
        let overridden = try await load(Self.endpointList, environment: ["LOGSHIPD_UPLOAD_URL": urls])
        #expect(overridden.upload.endpoints.map(\.url) == ["http://127.0.0.1:1/ingest", "http://127.0.0.1:2/ingest"])
        #expect(overridden.upload.endpoints.allSatisfy { $0.auth == nil && $0.tls == nil }, "the top-level sections")
        let bad = await loadError("", environment: ["LOGSHIPD_UPLOAD_URL": "http://127.0.0.1:1/ingest ftp://x"])
        #expect(bad.contains("LOGSHIPD_UPLOAD_URL (upload.url) entry 2: invalid value (not shown"), "\(bad)")
    }

    @Test("every entry is checked and named: its URL, its keys, its values, its files, and a URL listed twice")
    func endpointProblems() async throws {
        let shape = await loadError("""
            upload:
              url:
                - https://a.example/ingest
                - ftp://b.example/ingest
                - url: https://c.example/ingest
                  proxy: http://proxy
                  tls:
                    min_version: "1.1"
                - auth:
                    basic_user: me
            """)
        for expected in [
            "upload.url entry 2: invalid value (not shown: it may hold a credential)",
            "upload.url entry 3: unknown key proxy", "upload.url entry 3: tls.min_version: invalid value \"1.1\"",
            "upload.url entry 4 has no url",
        ] {
            #expect(shape.contains(expected), "\(expected) in \(shape)")
        }

        let rules = await loadError("""
            upload:
              url:
                - https://a.example/ingest
                - url: https://b.example/ingest
                  auth:
                    basic_user: me
                  tls:
                    ca_file: /nonexistent/ca.pem
                - https://a.example/ingest
                - https://a.example/ingest?key=x
            """)
        for expected in [
            "upload.url entry 2: auth.basic_user and auth.basic_password_file go together",
            "upload.url entry 2: tls.ca_file: cannot read /nonexistent/ca.pem",
            "upload.url entry 3 repeats an earlier entry's URL",
            "upload.url entry 4 differs from an earlier entry (https://a.example/ingest) only in its query or fragment",
        ] {
            #expect(rules.contains(expected), "\(expected) in \(rules)")
        }
    }

    @Test("""
        credentials that reach several receivers are noted: the top-level auth on plain entries, an Authorization header
        """)
    func credentialNotices() async throws {
        #expect(try await load(Self.endpointList).notices.isEmpty, "one plain entry takes the top-level auth")

        let twoPlain = try await load("""
            upload:
              url: [https://a.example/ingest, https://b.example/ingest?key=x]
            auth:
              bearer_token_file: /run/credentials/logshipd.service/token
            """)
        #expect(twoPlain.notices == [
            "upload.url entries 1 (https://a.example/ingest), 2 (https://b.example/ingest) are all sent the top-level "
                + "auth credentials: if a receiver should not have them, give its entry an auth section of its own "
                + "(auth: {} sends none)"
        ])

        // `auth:` with no value is an empty section, as at the top level: this entry sends no credentials.
        let ownNone = try await load("""
            upload:
              url:
                - https://a.example/ingest
                - url: https://b.example/ingest
                  auth:
              headers:
                authorization: Bearer abc
            """)
        #expect(ownNone.upload.endpoints[1].auth.map { !$0.sendsCredentials } == true)
        #expect(ownNone.notices.count == 1 && ownNone.notices[0].hasPrefix(
            "upload.headers' Authorization header is sent to upload.url entries 1 (https://a.example/ingest), "
                + "2 (https://b.example/ingest)"), "\(ownNone.notices)")

        let single = try await load("upload:\n  url: https://a.example/ingest\nauth:\n  bearer_token_file: /t\n")
        #expect(single.notices.isEmpty)
    }

    @Test("URLs separated by commas are refused, not read as one URL whose path holds the rest")
    func commaSeparatedURLs() async {
        let error = await loadError(
            "", environment: ["LOGSHIPD_UPLOAD_URL": "http://127.0.0.1:1/ingest,http://127.0.0.1:2/ingest"])
        #expect(error.contains(
            "LOGSHIPD_UPLOAD_URL (upload.url): several URLs are separated by spaces, not commas (not shown: it may "
                + "hold a credential)"), "\(error)")
        #expect(!error.contains("127.0.0.1:2"), "the value may hold a credential")
        let spaced = await loadError("upload:\n  url: http://127.0.0.1:1/ingest, http://127.0.0.1:2/ingest\n")
        #expect(spaced.contains("upload.url: several URLs are separated by spaces, not commas"), "\(spaced)")
    }

    @Test("logshipd --check-config names each bad endpoint and passes a good list")
    func checkConfigEndpoints() async throws {
        let directory = try TemporaryDirectory.make()
        let path = "\(directory)/logshipd.yaml"
        try "upload:\n  url:\n    - http://127.0.0.1:1/ingest\n    - not a url\n    - ftp://x\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let bad = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(bad.status == 1)
        #expect(bad.standardError.contains("upload.url entry 2: invalid value"), "\(bad.standardError)")
        #expect(bad.standardError.contains("upload.url entry 3: invalid value"), "\(bad.standardError)")

        try Self.endpointList.write(toFile: path, atomically: true, encoding: .utf8)
        let good = try await run(Binaries.logshipd, ["--check-config", "--config", path])
        #expect(good.status == 0, "\(good.standardError)")
    }

    @Test(
        "an endpoint is named in status, metrics and the log without what may hold credentials: its query and fragment"
    )
    func endpointShownName() async throws {
        let configuration = try await load("""
            upload:
              url:
                - https://logs-a.example:8443/ingest?api_key=k3y#part
                - http://logs-b.example/ingest
            """)
        let names = LiveConfiguration.shipperSettings(configuration).endpoints
        #expect(names == ["https://logs-a.example:8443/ingest", "http://logs-b.example/ingest"])
        #expect(configuration.upload.endpoints[0].url.contains("api_key=k3y"), "the request still carries them")
    }
}
