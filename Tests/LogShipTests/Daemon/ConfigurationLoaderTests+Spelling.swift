import Testing

@testable import LogShip

extension ConfigurationLoaderTests {
    @Test("a LOGSHIPD_ variable that overrides no key is a notice naming the nearest that does; logctl's is known")
    func unknownVariables() async throws {
        let configuration = try await load(
            nil,
            environment: ["LOGSHIPD_UPLOAD_TIMEOUTT": "5s", "LOGSHIPD_CONTROL": "/run/x.sock", "LOGSHIPD_ZZZ": "1"])
        #expect(configuration.notices == [
            "LOGSHIPD_UPLOAD_TIMEOUTT overrides no configuration key and is ignored; "
                + "did you mean LOGSHIPD_UPLOAD_TIMEOUT?",
            "LOGSHIPD_ZZZ overrides no configuration key and is ignored",
        ])
    }

    @Test("a mistyped key names the known key nearest to it; one near none names none")
    func mistypedKeys() async throws {
        #expect(
            await loadError("upload:\n  timout: 5s\n")
                .contains("unknown key upload.timout; did you mean upload.timeout?"))
        #expect(await loadError("spool:\n  max_byte: 1MiB\n").contains("did you mean spool.max_bytes?"))
        let far = await loadError("upload:\n  proxy: http://x\n")
        #expect(far.contains("unknown key upload.proxy") && !far.contains("did you mean"), "\(far)")
    }

    @Test("edit distance counts letters added, removed and changed")
    func editDistance() {
        #expect(ConfigurationLoader.editDistance("timout", "timeout") == 1)
        #expect(ConfigurationLoader.editDistance("kitten", "sitting") == 3)
        #expect(ConfigurationLoader.editDistance("", "abc") == 3)
        #expect(ConfigurationLoader.editDistance("same", "same") == 0)
    }
}
