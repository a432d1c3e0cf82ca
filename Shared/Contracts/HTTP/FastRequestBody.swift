import Foundation
import WireCodec

/// Hand-written reading of the request bodies of the high-volume routes: registrations and
/// cleanups (one, or a batch), BW devices and acks, and device changes (one, or a batch).
/// `JSONDecoder` took 15% of ingest's CPU on the registration batch route, and 47% on the change
/// batch route (docs/BENCHMARKS.md, "Ingest").
///
/// A value it returns is exactly what `WireJSON.decoder()` decodes from the same bytes. It
/// returns nil for other types and whenever it is not certain (escapes, unknown or repeated keys,
/// values of another JSON type, malformed JSON…): the caller then decodes with `JSONDecoder`,
/// which decides, and which words the error a client sees. Each type's reader (`init?(wire:)`)
/// sits beside the type.
public enum FastRequestBody {
    public static func decode<T>(_: T.Type, from bytes: UnsafeRawBufferPointer) -> T? {
        var reader = WireReader(bytes.assumingMemoryBound(to: UInt8.self))
        let value: Any? = switch T.self {
        case is DeviceRegistrationAPI.Registration.Type: DeviceRegistrationAPI.Registration(wire: &reader)
        case is [DeviceRegistrationAPI.Registration].Type: [DeviceRegistrationAPI.Registration](wire: &reader)
        case is DeviceRegistrationAPI.Cleanup.Type: DeviceRegistrationAPI.Cleanup(wire: &reader)
        case is [DeviceRegistrationAPI.Cleanup].Type: [DeviceRegistrationAPI.Cleanup](wire: &reader)
        case is BWDeviceAPI.Device.Type: BWDeviceAPI.Device(wire: &reader)
        case is BWDeviceAPI.Ack.Type: BWDeviceAPI.Ack(wire: &reader)
        case is DevicesAPI.ChangeBatch.Type: DevicesAPI.ChangeBatch(wire: &reader)
        case is DevicesAPI.Change.Type: DevicesAPI.Change(wire: &reader)
        default: nil
        }
        guard let value = value as? T, reader.atEnd() else { return nil }
        return value
    }
}
