import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A certificate authority made in memory for one test run, and the server certificate it signed
/// for `127.0.0.1` and `localhost`.
///
/// The mock push servers serve TLS with the server certificate; a client under test trusts them
/// only when it is handed this CA (its PEM, or the file `writeCertificate(to:)` writes), exactly
/// as a deployment would hand the sender a private CA. Both certificates are P-256 and valid from
/// an hour ago (clock skew) for three days.
public struct TestCA: Sendable {
    /// The CA certificate, PEM: what a client must trust.
    public let certificatePEM: String
    /// The server certificate followed by nothing else: a client already holds the CA.
    public let serverCertificateChain: [NIOSSLCertificate]
    /// The server certificate's private key.
    public let serverPrivateKey: NIOSSLPrivateKey

    public init() throws {
        let now = Date()
        let notBefore = now - 3600
        let notAfter = now + 3 * 86_400

        let caKey = P256.Signing.PrivateKey()
        let caKeyIdentifier = SubjectKeyIdentifier(hash: Certificate.PublicKey(caKey.publicKey))
        let caName = try DistinguishedName {
            OrganizationName("Pushline tests")
            CommonName("Pushline test CA")
        }
        let ca = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                caKeyIdentifier
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )

        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: caName,
            subject: try DistinguishedName {
                OrganizationName("Pushline tests")
                CommonName("localhost")
            },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
                AuthorityKeyIdentifier(keyIdentifier: caKeyIdentifier.keyIdentifier)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )

        certificatePEM = try ca.serializeAsPEM().pemString
        serverCertificateChain = [try NIOSSLCertificate(bytes: Array(try server.serializeAsPEM().pemString.utf8), format: .pem)]
        serverPrivateKey = try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)
    }

    /// Writes the CA certificate (PEM) to `path`, for a setting that names a CA file.
    public func writeCertificate(to path: String) throws {
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// A TLS server configuration presenting the server certificate.
    public func serverTLSConfiguration() -> TLSConfiguration {
        TLSConfiguration.makeServerConfiguration(
            certificateChain: serverCertificateChain.map { .certificate($0) },
            privateKey: .privateKey(serverPrivateKey)
        )
    }
}
