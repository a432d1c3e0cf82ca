import Foundation

/// A failure of a `pushline` command, worded for the operator: ArgumentParser prints it as one
/// line on standard error and exits with status 1.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
