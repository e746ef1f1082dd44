import Foundation
internal import MobileDocumentCapability
internal import ProximaCore

/// A document request a ``MobileDocumentReaderSession`` can run (Apple's `MobileDocumentRequest`).
public protocol MobileDocumentRequest: Sendable {
    associatedtype Response: Sendable
}

/// A request whose response hands verified elements to the app (Apple's `MobileDocumentDataRequest`).
public protocol MobileDocumentDataRequest: MobileDocumentRequest where Response: MobileDocumentDataResponse {}

/// A request whose response hands the DeviceResponse bytes and SessionTranscript to the app (Apple's
/// `MobileDocumentRawDataRequest`).
public protocol MobileDocumentRawDataRequest: MobileDocumentRequest {}

/// The response of a data request (Apple's `MobileDocumentDataResponse`).
public protocol MobileDocumentDataResponse: Sendable {}

/// How a request maps onto the ID service: its DocRequests, how the result is delivered, and the response built
/// from the outcome. Every request type of this module conforms; a request from elsewhere is `invalidRequest`.
protocol DocumentRequestMapping: Sendable {
    var documentRequests: [DocumentRequest] { get throws(MobileDocumentReaderError) }
    var delivery: DocumentDelivery { get }
    func response(_ outcome: DocumentReadOutcome) throws(MobileDocumentReaderError) -> any Sendable
}

// MARK: - Display

/// A driver's licence shown to the attendant, not the app (Apple's `MobileDriversLicenseDisplayRequest`): the
/// verified elements go to the lane's attendant display; the app gets only ``Response/validationOutcome``.
public struct MobileDriversLicenseDisplayRequest: MobileDocumentRequest {
    public typealias Element = MobileDriversLicenseDataRequest.Element

    /// Apple's display options.
    public struct Options: Hashable, Sendable {
        public enum ValidationMode: Hashable, Sendable {
            /// Check the document once.
            case check
            /// Check documents one after another (Apple's; each `readDocument` here is one check).
            case checkMultiple
            /// Show the elements for the attendant to confirm.
            case confirm
        }

        public var validationMode: ValidationMode
        public init(validationMode: ValidationMode = .check) { self.validationMode = validationMode }
    }

    /// What the app learns of a display request.
    public struct Response: Sendable, Hashable {
        public enum ValidationOutcome: Hashable, Sendable {
            /// The document verified (issuer chain and signature, digests, validity, device authentication) and
            /// its elements were shown to the attendant.
            case valid
        }

        public let validationOutcome: ValidationOutcome
    }

    public let elements: [Element]
    /// Elements the reader says it intends to retain (the sketch's `retainedElements:`).
    public let retainedElements: [Element]
    public let options: Options

    /// Elements to show, none of them retained (Apple's `init(elements:options:)`).
    public init(elements: [Element], options: Options = Options()) {
        self.elements = elements
        self.retainedElements = []
        self.options = options
    }

    /// Elements to show, each with the intent to retain sent to the holder.
    public init(retainedElements: [Element], options: Options = Options()) {
        self.elements = retainedElements
        self.retainedElements = retainedElements
        self.options = options
    }
}

extension MobileDriversLicenseDisplayRequest: DocumentRequestMapping {
    var documentRequests: [DocumentRequest] {
        get throws(MobileDocumentReaderError) {
            [try MobileDriversLicenseDataRequest.request(retained: retainedElements, notRetained: elements)]
        }
    }
    var delivery: DocumentDelivery { .display }
    func response(_ outcome: DocumentReadOutcome) -> any Sendable { Response(validationOutcome: .valid) }
}

// MARK: - Data

/// Verified driver's licence elements for the app (Apple's `MobileDriversLicenseDataRequest`): only the elements
/// asked, each with its intent to retain sent to the holder.
public struct MobileDriversLicenseDataRequest: MobileDocumentDataRequest {
    /// A driver's licence element (ISO/IEC 18013-5 §7.2.1 data element identifiers; AAMVA's for DHS compliance,
    /// organ donor and veteran).
    public struct Element: Hashable, Sendable, CustomStringConvertible {
        /// The namespace and element identifier requested.
        let namespace: String
        let identifier: String
        /// `ageAtLeast(n)`'s n.
        let ageThreshold: Int?

        init(_ identifier: String, namespace: String = DocumentRequest.mDLNamespace, ageThreshold: Int? = nil) {
            self.namespace = namespace
            self.identifier = identifier
            self.ageThreshold = ageThreshold
        }

        static let aamva = "org.iso.18013.5.1.aamva"

        public var description: String { identifier }

        public static let address = Element("resident_address")
        public static let age = Element("age_in_years")
        /// Whether the holder is at least `age` years old (`age_over_NN`, 0–99).
        public static func ageAtLeast(_ age: Int) -> Element {
            let clamped = min(max(age, 0), 99)
            return Element("age_over_" + (clamped < 10 ? "0" : "") + String(clamped), ageThreshold: clamped)
        }
        /// The sketch's `.ageOver21`: ``ageAtLeast(_:)`` 21.
        public static let ageOver21 = ageAtLeast(21)
        public static let dateOfBirth = Element("birth_date")
        public static let documentDHSComplianceStatus = Element("DHS_compliance", namespace: aamva)
        public static let documentExpirationDate = Element("expiry_date")
        public static let documentIssueDate = Element("issue_date")
        public static let documentNumber = Element("document_number")
        public static let drivingPrivileges = Element("driving_privileges")
        public static let eyeColor = Element("eye_colour")
        public static let familyName = Element("family_name")
        public static let givenName = Element("given_name")
        public static let hairColor = Element("hair_colour")
        public static let height = Element("height")
        public static let issuingAuthority = Element("issuing_authority")
        public static let nationality = Element("nationality")
        public static let organDonorStatus = Element("organ_donor", namespace: aamva)
        public static let placeOfBirth = Element("birth_place")
        public static let portrait = Element("portrait")
        public static let sex = Element("sex")
        public static let veteranStatus = Element("veteran", namespace: aamva)
        public static let weight = Element("weight")
    }

    /// The verified elements (Apple's `Response.documentElements`).
    public struct Response: MobileDocumentDataResponse {
        public let documentElements: DocumentElements
    }

    /// The elements that came back and verified, typed; an element not asked or not returned is `nil`.
    public struct DocumentElements: Sendable, Hashable {
        public enum Sex: Hashable, Sendable {
            case male, female, notApplicable, notSpecified, unknown
        }

        /// `ageAtLeast(n)` → whether the holder is at least n.
        public let ageAtLeastElements: [Int: Bool]
        public let age: Int?
        /// The portrait, JPEG or JPEG 2000.
        public let portraitData: Data?
        public let dateOfBirth: DateComponents?
        public let nameComponents: PersonNameComponents?
        public let documentNumber: String?
        public let documentIssueDate: DateComponents?
        public let documentExpirationDate: DateComponents?
        public let issuingAuthority: String?
        public let nationality: String?
        public let placeOfBirth: String?
        public let sex: Sex?
        /// Height in centimetres, weight in kilograms (ISO/IEC 18013-5 units).
        public let heightInCentimeters: Int?
        public let weightInKilograms: Int?
        public let eyeColor: String?
        public let hairColor: String?
        public let address: String?
        /// AAMVA `DHS_compliance` "F" (fully compliant).
        public let isDHSCompliant: Bool?
        public let isOrganDonor: Bool?
        public let isVeteran: Bool?
    }

    public let retainedElements: [Element]
    public let nonRetainedElements: [Element]

    /// - Parameters:
    ///   - retainedElements: Elements the app intends to retain (intent to retain `true` sent to the holder).
    ///   - nonRetainedElements: Elements only looked at (intent to retain `false`).
    public init(retainedElements: [Element] = [], nonRetainedElements: [Element] = []) {
        self.retainedElements = retainedElements
        self.nonRetainedElements = nonRetainedElements
    }

    /// The DocRequest of the mDL docType with `retained` (intent `true`) and `notRetained` (`false`).
    /// - Throws: ``MobileDocumentReaderError/invalidRequest(_:)`` for no element or one element twice.
    static func request(retained: [Element], notRetained: [Element]) throws(MobileDocumentReaderError)
        -> DocumentRequest
    {
        var elements: [String: [String: Bool]] = [:]
        let all = retained.map { ($0, true) } + notRetained.filter { !retained.contains($0) }.map { ($0, false) }
        guard !all.isEmpty else { throw .invalidRequest("the request names no element") }
        for (element, retain) in all {
            guard elements[element.namespace]?[element.identifier] == nil else {
                throw .invalidRequest("\(element.identifier) is requested twice")
            }
            elements[element.namespace, default: [:]][element.identifier] = retain
        }
        return DocumentRequest(elements: elements)
    }
}

extension MobileDriversLicenseDataRequest: DocumentRequestMapping {
    var documentRequests: [DocumentRequest] {
        get throws(MobileDocumentReaderError) {
            if let twice = retainedElements.first(where: nonRetainedElements.contains) {
                throw .invalidRequest("\(twice.identifier) is both retained and not retained")
            }
            return [try Self.request(retained: retainedElements, notRetained: nonRetainedElements)]
        }
    }
    var delivery: DocumentDelivery { .data }
    func response(_ outcome: DocumentReadOutcome) throws(MobileDocumentReaderError) -> any Sendable {
        guard let exchange = outcome.exchange else { throw .unknown("the read returned no elements") }
        return Response(documentElements: DocumentElements(exchange.document))
    }
}

extension MobileDriversLicenseDataRequest.DocumentElements {
    init(_ document: VerifiedDocument) {
        let iso = document.elements[DocumentRequest.mDLNamespace] ?? [:]
        let aamva = document.elements[MobileDriversLicenseDataRequest.Element.aamva] ?? [:]
        func date(_ value: CBORValue?) -> DateComponents? {
            if let day = value?.fullDateValue { return DateComponents(year: day.year, month: day.month, day: day.day) }
            if let time = value?.dateTimeValue {
                return DateComponents(year: time.year, month: time.month, day: time.day)
            }
            return nil
        }
        var ages: [Int: Bool] = [:]
        for (identifier, value) in iso where identifier.hasPrefix("age_over_") {
            if let age = Int(identifier.dropFirst("age_over_".count)), let flag = value.boolValue { ages[age] = flag }
        }
        ageAtLeastElements = ages
        age = iso["age_in_years"]?.intValue
        portraitData = iso["portrait"]?.bytesValue.map { Data($0) }
        dateOfBirth = date(iso["birth_date"])
        let given = iso["given_name"]?.textValue
        let family = iso["family_name"]?.textValue
        if given != nil || family != nil {
            var name = PersonNameComponents()
            name.givenName = given
            name.familyName = family
            nameComponents = name
        } else {
            nameComponents = nil
        }
        documentNumber = iso["document_number"]?.textValue
        documentIssueDate = date(iso["issue_date"])
        documentExpirationDate = date(iso["expiry_date"])
        issuingAuthority = iso["issuing_authority"]?.textValue
        nationality = iso["nationality"]?.textValue
        placeOfBirth = iso["birth_place"]?.textValue
        sex = iso["sex"]?.intValue.map {
            switch $0 {
            case 1: .male
            case 2: .female
            case 9: .notApplicable
            case 0: .unknown
            default: .notSpecified
            }
        }
        heightInCentimeters = iso["height"]?.intValue
        weightInKilograms = iso["weight"]?.intValue
        eyeColor = iso["eye_colour"]?.textValue
        hairColor = iso["hair_colour"]?.textValue
        address = iso["resident_address"]?.textValue
        isDHSCompliant = aamva["DHS_compliance"]?.textValue.map { $0 == "F" }
        isOrganDonor = aamva["organ_donor"]?.intValue.map { $0 == 1 }
        isVeteran = aamva["veteran"]?.intValue.map { $0 == 1 }
    }
}

// MARK: - Raw

/// The holder's DeviceResponse bytes and the session's SessionTranscript for the app's own ISO/IEC 18013-5
/// processing (Apple's `MobileDriversLicenseRawDataRequest`). Proxima verifies the response before handing it
/// over, as for a data request.
public struct MobileDriversLicenseRawDataRequest: MobileDocumentRawDataRequest {
    public typealias Element = MobileDriversLicenseDataRequest.Element

    public struct Response: Sendable, Hashable {
        /// The decrypted DeviceResponse (CBOR), exactly as the holder sent it.
        public let responseData: Data
        /// The encoded SessionTranscript the response's device authentication covers.
        public let sessionTranscript: Data
    }

    public let retainedElements: [Element]
    public let nonRetainedElements: [Element]

    public init(retainedElements: [Element] = [], nonRetainedElements: [Element] = []) {
        self.retainedElements = retainedElements
        self.nonRetainedElements = nonRetainedElements
    }
}

extension MobileDriversLicenseRawDataRequest: DocumentRequestMapping {
    var documentRequests: [DocumentRequest] {
        get throws(MobileDocumentReaderError) {
            try MobileDriversLicenseDataRequest(
                retainedElements: retainedElements,
                nonRetainedElements: nonRetainedElements
            ).documentRequests
        }
    }
    var delivery: DocumentDelivery { .raw }
    func response(_ outcome: DocumentReadOutcome) throws(MobileDocumentReaderError) -> any Sendable {
        guard let exchange = outcome.exchange else { throw .unknown("the read returned no response") }
        return Response(
            responseData: Data(exchange.deviceResponse),
            sessionTranscript: Data(exchange.sessionTranscript)
        )
    }
}

// MARK: - Any of

/// Several data requests in one DeviceRequest, one per document type; the first the holder returns answers
/// (Apple's `MobileDocumentAnyOfDataRequest`).
public struct MobileDocumentAnyOfDataRequest: MobileDocumentRequest {
    public struct Response: Sendable {
        /// The response of the request that was answered.
        public let documentResponse: any MobileDocumentDataResponse
    }

    private(set) var requests: [any MobileDocumentDataRequest] = []

    public init() {}

    /// Adds a request; its document type must differ from those already added.
    public mutating func addRequest(_ request: some MobileDocumentDataRequest) { requests.append(request) }
}

extension MobileDocumentAnyOfDataRequest: DocumentRequestMapping {
    var mappings: [any DocumentRequestMapping] { requests.compactMap { $0 as? any DocumentRequestMapping } }

    var documentRequests: [DocumentRequest] {
        get throws(MobileDocumentReaderError) {
            guard !requests.isEmpty else { throw .invalidRequest("the any-of request holds no request") }
            guard mappings.count == requests.count else {
                throw .invalidRequest("the any-of request holds a request type this build does not read")
            }
            var all: [DocumentRequest] = []
            for mapping in mappings { all += try mapping.documentRequests }
            return all
        }
    }
    var delivery: DocumentDelivery { .data }
    func response(_ outcome: DocumentReadOutcome) throws(MobileDocumentReaderError) -> any Sendable {
        guard let answered = outcome.exchange?.answered else { throw .unknown("the read returned no elements") }
        for mapping in mappings where (try? mapping.documentRequests)?.contains(answered) == true {
            guard let response = try mapping.response(outcome) as? any MobileDocumentDataResponse else { break }
            return Response(documentResponse: response)
        }
        throw .unknown("the answered document matches none of the requests")
    }
}

// MARK: - Factories

extension MobileDocumentRequest where Self == MobileDriversLicenseDataRequest {
    /// Apple's `.driversLicenseData(retaining:notRetaining:)`.
    public static func driversLicenseData(
        retaining: [MobileDriversLicenseDataRequest.Element] = [],
        notRetaining: [MobileDriversLicenseDataRequest.Element] = []
    ) -> MobileDriversLicenseDataRequest {
        MobileDriversLicenseDataRequest(retainedElements: retaining, nonRetainedElements: notRetaining)
    }
}

extension MobileDocumentRequest where Self == MobileDriversLicenseRawDataRequest {
    /// Apple's `.driversLicenseRawData(retaining:notRetaining:)`.
    public static func driversLicenseRawData(
        retaining: [MobileDriversLicenseDataRequest.Element] = [],
        notRetaining: [MobileDriversLicenseDataRequest.Element] = []
    ) -> MobileDriversLicenseRawDataRequest {
        MobileDriversLicenseRawDataRequest(retainedElements: retaining, nonRetainedElements: notRetaining)
    }
}

extension MobileDocumentRequest where Self == MobileDriversLicenseDisplayRequest {
    /// Apple's `.displayDriversLicense(_:options:)`.
    public static func displayDriversLicense(
        _ elements: [MobileDriversLicenseDisplayRequest.Element],
        options: MobileDriversLicenseDisplayRequest.Options = .init()
    ) -> MobileDriversLicenseDisplayRequest {
        MobileDriversLicenseDisplayRequest(elements: elements, options: options)
    }
}
