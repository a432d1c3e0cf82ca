/// The limits of every free-form field a client sends, in one table (the README's "Field limits"
/// and the OpenAPI document's `maxLength`s say the same). Ingest refuses a longer value with a
/// 400 naming the field, before anything is written.
///
/// They are chosen so that an accepted value fits both projection stores — PostgreSQL refuses a
/// B-tree index entry over about 2,700 bytes, and user ids and notification ids are parts of keys
/// and indexes (device tokens are too, by their hash there) — and so that every command fits one
/// Kafka record with room to spare. Lengths count UTF-8 bytes.
public enum FieldLimits {
    /// A user id: the registration API's `UserId`, a send's `userId`/`userIds`, KF5 `userToken` (a
    /// BW user id is shorter by construction: `tel:` + 15 digits, or `mailto:` + 254 bytes). Part
    /// of the `devices_by_user` index and of app callback job ids.
    public static let userIdBytes = 1_024
    /// A device token as a client names one (BW `deviceId`, `did`, KF5 `deviceToken`, a send's
    /// `deviceTokens`, a cleanup's `DeviceToken`): the registration API's 4,096 bytes. PostgreSQL
    /// keys a token by its hash, so every accepted token is a key in both stores. Real APNs tokens
    /// have 64 characters, FCM ones about 160.
    public static let deviceTokenBytes = DeviceRegistrationAPI.maxDeviceTokenBytes
    /// An API token as presented (generated ones have 43 characters).
    public static let apiTokenBytes = 512
    /// A business id (`bid`, a send's `businessId`), a `ticketId`, an app `name`.
    public static let shortTextBytes = 256
    /// An `im` send's `message` (also its alert text, and part of the app callback body).
    public static let messageBytes = 4_096
    /// A tracking `broadlogId` (`<position>-<16 hex>` for Pushline's own).
    public static let broadlogIdBytes = 64
    /// A device's time zone, an IANA name such as `America/Argentina/Buenos_Aires` (the
    /// registration API's `TimeZone`); the longest in use has 32 bytes.
    public static let timeZoneBytes = 64
    /// A callback URL (`x-ms-callback-url`, an app's `callbackUrl`) or a media URL.
    public static let urlBytes = 2_048
    /// Callback headers (`x-ms-callback-url-headers`, an app's `callbackHeaders`): how many, and
    /// the length of each name and value.
    public static let callbackHeaderCount = 32
    public static let callbackHeaderNameBytes = 256
    public static let callbackHeaderValueBytes = 4_096
    /// The largest command ingest writes: well under the broker's default `message.max.bytes`
    /// (1,000,000) with the record's key and headers. A request whose command would be larger
    /// is refused with 413, whatever made it so (escaping can make a byte six).
    public static let commandBytes = 900_000
}
