import Foundation

/// The checkout's root directory, found from this file's place in it: for tests that read the repository's own
/// files (the example configuration, the unit files, the fuzz corpus).
let packageRoot = URL(fileURLWithPath: #filePath)  // Tests/LogShipTests/Support/PackageRoot.swift
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
