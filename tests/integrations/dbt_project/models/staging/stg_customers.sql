select id as customer_id, name as customer_name, upper(country) as country_code
from {{ source('shop', 'customers') }}
