// Like Apple's ProximityReader, importing Proxima brings Foundation along (`Decimal`, `Date`, `Locale`), so code
// written for iOS (`PaymentCardTransactionRequest(amount: Decimal(29.99), …)`) compiles with `import Proxima` as
// its only import.
@_exported import Foundation
